"""Dropping pending parts, and withdrawing a progress message whose work is over before it showed.

A progress message (a notice, a card) that reaches its chat after the answer only misleads: it
reads "⏳" under a finished reply. So when its work is over, one not sent yet is dropped with its
pending edits and deletions, and one that may have gone out (in flight, tried before a crash, a
piece of it sent, given up on with its answers lost) is left for its final change to finish. Telling
the two apart reads what the sender knows of a part's fate (`Sender.maybe_sent`,
`Sender.look_up_failed`). It stands apart from `gateway.outbox`'s queueing and journaling so the
rule reads in one place.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.outbox_part import ChatKey
from gateway.sender import Sender
from gateway.store import OutboxRow, OutboxRows

CHANGES = ("edit", "delete", "split")
"""What changes a progress message: its edits and deletions, and one of them re-split (`gateway.resplit`)."""

Drop = Callable[[str, str, str | None, Callable[[OutboxRow], bool]], int]
"""`Outbox.drop`."""


def drop_pending(store: OutboxRows, chat: ChatKey, predicate: Callable[[OutboxRow], bool],
                 resolve: Callable[[str, str | None], None]) -> int:
    """`Outbox.drop` of the chat's pending parts; ``resolve(key, None)`` for each one dropped."""
    rows: list[OutboxRow] = []
    chosen: set[int] = set()
    splits: set[str] = set()
    for row in store.pending_messages(chat):  # in id order: a split's pieces come after it
        if predicate(row):
            chosen.add(row.id)
        elif not (splits and "/" in row.key and row.key.rpartition("/")[0] in splits):
            continue
        # A re-split part's pieces go with it (withdrawn with a card, they would follow the answer).
        rows.append(row)
        if row.op == "split":
            splits.add(row.key)
    dropped = store.drop([r.id for r in rows])
    for row in rows:
        if row.id in dropped:
            resolve(row.key, None)
    return len(chosen.intersection(dropped))


def withdrawn(target: OutboxRow, *, store: OutboxRows, sender: Sender, in_flight: Callable[[ChatKey], int | None],
              drop: Drop) -> bool:
    """`Outbox.withdraw` of the progress message ``target``; ``in_flight(chat)``: the id of the chat's
    part being sent now, if any."""
    chat = target.chat
    if target.status == "failed" and target.message_id is None:
        # Its changes still pending would each be sent anew, in its place: after the answer (a final
        # "✓ Done" under it, of a card nobody saw). One in flight may yet put it in the chat.
        sending = in_flight(chat)
        drop(*chat, lambda r: r.target_key == target.key and r.op in CHANGES)
        # Given up on while its answers were lost, it may be in the chat: where the platform can be asked,
        # the final change asks (once), as for a card withdrawn mid-send, and finishes the one found.
        lost = sender.look_up_failed(target)
        store.dismiss(target.id)
        changing = sending is not None and (row := store.message_by_id(sending)) is not None \
            and row.target_key == target.key
        return not (changing or lost)
    if target.status != "pending":
        return False
    drop(*chat, lambda r: r.target_key == target.key and r.op in CHANGES)
    dropped = drop(*chat, lambda r: r.id == target.id) == 1
    # Tried before this start, it may have gone out just before the last process died; and a re-split one
    # (`gateway.resplit`) may have a piece in the chat, the card there.
    return (dropped and in_flight(chat) != target.id and not sender.maybe_sent(target)
            and not (target.op == "split" and any(p.status == "sent" for p in store.pieces(target.key))))
