"""Reading a turn back from the store: the webhook platform's read of it, where a delivery's turn
came from, and whether its chat is a private one.

A webhook's caller follows a turn by its id (`platforms.base.TurnReading`): it reads back the
turn's messages and those of the background delegations the turn started, and learns when
nothing more will come. A completion turn has no message of its own: what it is (private or not,
traced under which turn) is read from the turn that started its delegation. Kept apart from
`gateway.app` because it only reads the store and the ledger; nothing in it takes part in handling
a turn.
"""

from __future__ import annotations

from gateway.ledger import Ledger
from gateway.sessions import GatewaySession, RunningTurn
from gateway.store import GatewayStore
from gateway.store.delegations import COMPLETION_TURN_PREFIX
from platforms.base import TurnRead


async def read_turn(store: GatewayStore, ledger: Ledger, route: str, turn_id: str) -> TurnRead:
    """The turn's messages (files sent included), then those of the background delegations it started
    (their completion or interruption report). Complete once the turn has ended, each of those
    delegations is settled and no file of theirs waits to be kept. LookupError for a turn this route
    never started."""
    # The store's own connection reads what is written and not committed yet: a caller must not take
    # as sent, or as complete, what a crash would undo.
    await store.durable()
    event = store.inbox.event_of_turn("webhook", turn_id)
    if event is None or not event.chat_id.startswith(f"{route}:"):
        raise LookupError(turn_id)
    delegations = ledger.of_turn(turn_id)
    messages = [{**m, "turn_id": t} for t in (turn_id, *(d.completion_turn_id for d in delegations))
                for m in store.outbox.turn_messages("webhook", t)
                if (m.get("kind") != "interim" or m.get("op") == "file")
                and str(m.get("chat_id", "")).startswith(f"{route}:")]
    ended = store.inbox.settled(event.platform, event.event_id)
    files_kept = all(m["status"] != "pending" for m in messages if m.get("op") == "file")
    return TurnRead(messages, complete=ended and files_kept and all(d.status != "running" for d in delegations))


def private_chat(store: GatewayStore, session: GatewaySession, running: RunningTurn) -> bool:
    """Whether the turn's chat is a private one, as the message that started it (or, for a
    background delivery, the one that started the delegation) says; a chat it cannot tell
    counts as private."""
    event = running.event
    if event is None and running.delegation_id is not None:
        origin = origin_of(store, running.delegation_id)
        event = store.inbox.event_of_turn(session.platform, origin) if origin is not None else None
    return event is None or event.is_private


def origin_turn(store: GatewayStore, turn_id: str) -> str | None:
    """The turn of the request a message of ``turn_id`` answers (`platforms.base.TurnOrigin`): ``turn_id`` itself,
    unless it is a background delegation's completion turn (its results, a report of its failure or interruption,
    a ``/retry``'s, whose delegation keeps the origin of the one it retries): then the turn that dispatched it,
    followed on while that was a completion turn too. None once a delegation on the way is forgotten."""
    seen = set()
    while turn_id.startswith(COMPLETION_TURN_PREFIX) and turn_id not in seen:  # a loop only a corrupted store could make
        seen.add(turn_id)
        origin = origin_of(store, turn_id.removeprefix(COMPLETION_TURN_PREFIX))
        if origin is None:
            return None
        turn_id = origin
    return turn_id


def origin_of(store: GatewayStore, delegation_id: str) -> str | None:
    row = store.delegations.get(delegation_id)
    return row.origin_turn_id if row is not None else None
