"""A failed part's quote goes to the turn's next message.

In a group the first message of each answer quotes the member's message it answers, and the rest
follow on unquoted (`gateway.sessions.RunningTurn.take_quote`). The turn takes the quote as it
journals that message, long before the platform has taken it: a file the platform refuses (its size,
the chat's rights) took the quote all the same, and the reply after it went out unquoted, nobody's.
So a part that took the quote and failed passes it on, unless a part of the turn that quoted the same
message went out: the quote is spent only by a message the platform accepted.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway import late_notes
from gateway.store import OutboxRow, OutboxRows

EXPIRED = ":expired:"
"""In the key of the note that a question went unanswered (``<question's key>:expired:0``,
`gateway.questions`)."""


def spends_quote(key: str) -> bool:
    """Whether the part of ``key`` took its turn's quote: the notes about a turn (that it comes late,
    that its question went unanswered) quote the member's message and leave the quote to the answer."""
    return not (key.endswith(late_notes.SUFFIX) or late_notes.PICKED_UP in key or EXPIRED in key)


def pass_quote(store: OutboxRows, row: OutboxRow, unspent: Callable[[OutboxRow], None] | None) -> None:
    """``row`` failed: if it took its turn's quote and no part of the turn went out with that quote,
    the turn's next message already journaled quotes from now on; with none journaled yet,
    ``unspent(row)`` tells the turn, whose next message may take it."""
    if row.reply_to is None or row.turn_id is None or not spends_quote(row.key):
        return
    if any(spends_quote(key) for key in store.sent_quoting(row.platform, row.turn_id, row.reply_to)):
        return
    if not store.quote_next(row) and unspent is not None:
        unspent(row)
