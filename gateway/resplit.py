"""The pieces a part is split into again when the platform refuses it as too long (`MessageTooLong`):
an adapter's measure of its text can fall short of the platform's, so the outbox halves the limit
and journals the pieces in the part's place (`gateway.sender`).

A progress message (a notice, a card) is one message whatever its length, as `gateway.progress_message`
keeps it: its re-split keeps only the first piece, what fits of it. The rest, messages of their own,
would never be edited again: stale lines of a card under the answer for good. And an edit is made with
the first piece, of the message it edits; sent anew instead, it left that message reading ``⏳`` for good.

Apart from the sender because it is pure: what the pieces are and what they are called, not how
they are sent.
"""

from __future__ import annotations

from gateway.splitting import safe_measure, split_text
from gateway.store import NewMessage, OutboxRow
from platforms.base import Adapter


def pieces(adapter: Adapter, row: OutboxRow, *, one_message: bool = False) -> list[NewMessage]:
    """``row``'s text in pieces of at most half what the platform refused, as rows to journal under
    ``{key}/{name}`` (the first quoting what the part quoted); none when it cannot be cut in two.
    ``one_message``: the first piece alone (a progress message's). The first piece of an edit edits
    its message; the rest are sent after it."""
    measure = safe_measure(adapter)
    limit = min(adapter.text_limit, measure(row.text)) // 2
    try:
        parts = split_text(row.text, limit, measure) if limit >= 1 else []
    except ValueError:
        parts = []
    if len(parts) < 2:
        return []
    edit = row.op == "edit"
    return [
        NewMessage(f"{row.key}/{_piece_name(i)}", row.platform, row.chat_id, row.thread_id, part, kind=row.kind,
                   op="edit" if edit and i == 0 else "send", target_key=row.target_key if edit and i == 0 else None,
                   silent=row.silent, reply_token=row.reply_token, turn_id=row.turn_id, sequence=row.sequence,
                   reply_to=row.reply_to if i == 0 else None, private=row.private)
        for i, part in enumerate(parts[:1] if one_message else parts)]  # fmt: skip


def _piece_name(i: int) -> str:
    # Names sort in piece order (turn_messages orders a split's pieces by key): a..y, then z000025...
    return chr(ord("a") + i) if i < 25 else f"z{i:06d}"


def past_the_first(key: str) -> bool:
    """Whether the progress message part under ``key`` is a message past its first: a part after the first
    of a text split to the platform's limit (``…:1``), or a re-split piece after the first (``…/b``). This
    build journals none that is sent (a progress message is one message, `gateway.progress_message`); an
    older build sent them, as messages of their own that its edits never reached."""
    part, *pieces = key.rpartition(":")[2].split("/")
    return (part.isdigit() and part != "0") or any(piece != "a" for piece in pieces)
