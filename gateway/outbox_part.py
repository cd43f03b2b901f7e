"""One journaled outbox part as the sender and its helpers hand it to a platform.

Kept apart from `gateway.sender` so that the modules it leans on (`gateway.sent_lookup`,
`gateway.part_notes`) share its notion of a part (what is progress, the `Outbound` it becomes, the
words an error about it is recorded in) without importing the sender back.
"""

from __future__ import annotations

from gateway.logging import redacted_bounded
from gateway.store import OutboxRow
from platforms.base import Adapter, FindsSent, Outbound

ChatKey = tuple[str, str, str | None]
PROGRESS_KINDS = frozenset({"notice"})
"""Parts that say how work is going rather than what came of it: they yield to every other part."""


def describe(exc: BaseException) -> str:
    # The class and the platform's description; adapters do not put message text in errors. The class
    # once, where the description already starts with it (Telegram's "Forbidden: bot was blocked by the user").
    # Masked as a log line is, for the outbox keeps it (`last_error`): an SDK's error may quote a request's URL.
    name, text = type(exc).__name__, str(exc)
    return redacted_bounded(text if text.partition(":")[0] == name else f"{name}: {text}")[:500]


def findable(adapter: Adapter | None, row: OutboxRow) -> bool:
    """Whether ``row`` can be looked up; one never to be found (a slash command's answer) takes no lookup's turn."""
    if not isinstance(adapter, FindsSent) or row.op == "file" and not getattr(adapter, "finds_files", True):
        return False
    findable = getattr(adapter, "findable", None)  # optional (`FindsSent`): without it, every part is looked up
    return findable is None or findable(outbound(row))


def answers_privately(adapter: Adapter, reply_token: str | None) -> bool:
    """Whether a part answering through ``reply_token`` is for the command's user alone, as the adapter says when
    it is journaled (an optional ``answers_privately(reply_token)``: Discord's, told of a refusal). Journaled
    with the part (`platforms.base.Outbound.private`): an adapter's memory of it is gone after a restart."""
    asked = getattr(adapter, "answers_privately", None)
    return reply_token is not None and asked is not None and asked(reply_token)


def outbound(row: OutboxRow) -> Outbound:
    return Outbound(row.chat_id, row.thread_id, row.text, kind=row.kind, silent=row.silent,  # type: ignore[arg-type]
                    reply_token=row.reply_token, idempotency_key=row.key, turn_id=row.turn_id, sequence=row.sequence,
                    reply_to=row.reply_to, private=row.private)
