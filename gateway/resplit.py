"""The pieces a part is split into again when the platform refuses it as too long (`MessageTooLong`):
an adapter's measure of its text can fall short of the platform's, so the outbox halves the limit
and journals the pieces in the part's place (`gateway.sender`).

Apart from the sender because it is pure: what the pieces are and what they are called, not how
they are sent.
"""

from __future__ import annotations

from gateway.splitting import safe_measure, split_text
from gateway.store import NewMessage, OutboxRow
from platforms.base import Adapter


def pieces(adapter: Adapter, row: OutboxRow) -> list[NewMessage]:
    """``row``'s text in pieces of at most half what the platform refused, as rows to journal under
    ``{key}/{name}`` (the first quoting what the part quoted); none when it cannot be cut in two."""
    measure = safe_measure(adapter)
    limit = min(adapter.text_limit, measure(row.text)) // 2
    try:
        parts = split_text(row.text, limit, measure) if limit >= 1 else []
    except ValueError:
        parts = []
    if len(parts) < 2:
        return []
    return [
        NewMessage(f"{row.key}/{_piece_name(i)}", row.platform, row.chat_id, row.thread_id, part, kind=row.kind,
                   silent=row.silent, reply_token=row.reply_token, turn_id=row.turn_id, sequence=row.sequence,
                   reply_to=row.reply_to if i == 0 else None)
        for i, part in enumerate(parts)]  # fmt: skip


def _piece_name(i: int) -> str:
    # Names sort in piece order (turn_messages orders a split's pieces by key): a..y, then z000025...
    return chr(ord("a") + i) if i < 25 else f"z{i:06d}"
