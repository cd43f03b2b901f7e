"""What the chats of a platform taken out of the configuration left: kept, untouched, until it is back.

The operator may disable a platform (Telegram, say) with messages to answer, background results to
deliver and messages to send still stored for its chats. None of it is run (nothing could answer
it), counted as failed or dropped: it waits for a start that configures the platform again. Kept
apart from `gateway.app`'s start so the one rule, and the one line per platform that says so, live
together.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence

from gateway.store import DelegationRow, GatewayStore, OutboxRow, split_session_key

log = logging.getLogger("gateway.app")  # the gateway's start-up lines, wherever they are written from
TERMINAL = "local"
"""The terminal's platform: only ``switchboard chat`` runs it, whatever the configuration says."""


def configured(row: DelegationRow, adapters: Collection[str]) -> bool:
    """Whether the delegation's chat is of a platform configured now (else it is kept: `keep_unconfigured`)."""
    return split_session_key(row.session_key)[0] in adapters


def keep_unconfigured(store: GatewayStore, adapters: Collection[str], pending: Sequence[OutboxRow],
                      undelivered: Sequence[DelegationRow]) -> None:
    """Log, once per platform not in ``adapters``, what its chats left and is kept for it."""
    kept: dict[str, list[int]] = {}
    for platform, count in store.inbox.waiting_by_platform().items():
        kept.setdefault(platform, [0, 0, 0])[0] += count
    for row in undelivered:
        kept.setdefault(split_session_key(row.session_key)[0], [0, 0, 0])[1] += 1
    for message in pending:
        kept.setdefault(message.platform, [0, 0, 0])[2] += 1
    for platform, (events, results, messages) in sorted(kept.items()):
        if platform == TERMINAL and platform not in adapters:
            # No setting configures the terminal: told to configure it, an operator of `switchboard run` looked
            # for a `platforms.local` that does not exist, warned so at every start until the next chat.
            log.warning("the terminal chat is not running here: %d message(s) to answer, %d background result(s) to"
                        " deliver and %d message(s) to send are kept, untouched, until `switchboard chat` next"
                        " starts on this state directory", events, results, messages)
        elif platform not in adapters:
            log.warning("%s is not configured: %d message(s) to answer, %d background result(s) to deliver and"
                        " %d message(s) to send are kept, untouched, until it is configured again", platform,
                        events, results, messages)
