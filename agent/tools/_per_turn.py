"""How much a tool may do in one turn (`TurnBudget`): how many times ``send_message`` and ``send_file``
act, how many bytes ``write_file`` writes.

Both reach the chat at once, before the turn ends. A model caught in a loop may call one in every
answer, up to 64 calls an answer and 90 answers a turn: thousands of messages (or copies of files)
in the chat, each journaled and sent, from one turn nobody can take back. Counted by the tool, so
every host gets the bound; the gateway's own count (the outbox key's) is for idempotency, not this.
A loop of ``write_file`` calls, likewise, put gigabytes into the workspace, filling the disk the state
database is on: it is bounded in bytes.

A host that builds a fresh stand-in session for each tool call of one long-lived session (a Temporal
worker does, for a child's calls) marks each with `count_by_session_id`: counted by object, the count
would start afresh at every call. Those are counted by session id instead, by that host alone (a child's
turn that moves to another worker counts afresh there), for the `MAX_COUNTED_SESSIONS` latest.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import MutableMapping
from typing import Any

from agent._tools import ToolContext


class _Sessionless:
    """The key of calls a host made without a session (tests, a bare `Tool.invoke`), or with one that
    cannot be weakly referenced (a host's own plain value): their turns are told apart by id alone."""


_SESSIONLESS = _Sessionless()

MAX_COUNTED_SESSIONS = 4096
"""How many sessions counted by id a budget remembers: past that the least recently counted (a finished
child's, on a worker) is forgotten, so the counts do not grow over a worker's life."""

_STAND_INS: weakref.WeakSet[Any] = weakref.WeakSet()


def count_by_session_id(session: Any) -> None:
    """Count ``session``'s turns under its ``session_id``, together with every other stand-in for it."""
    _STAND_INS.add(session)


class TurnBudget:
    """At most ``most`` per turn of a session: successful calls, or what they took (bytes). Kept by
    session (weakly, so a closed session's count goes with it; a stand-in's by its id), for the session's
    latest turn only: a new turn id starts afresh. A turn run again after a restart counts from 0 again,
    as the host's idempotency keys do. Locked: plain-function tools (``write_file``) take from worker
    threads."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._used: weakref.WeakKeyDictionary[Any, tuple[str, int]] = weakref.WeakKeyDictionary()
        self._by_id: OrderedDict[str, tuple[str, int]] = OrderedDict()
        self._lock = threading.Lock()

    def _slot(self, ctx: ToolContext) -> tuple[MutableMapping[Any, tuple[str, int]], Any]:
        """Where ``ctx``'s count is kept, and under which key (called under the lock)."""
        if ctx.session in _STAND_INS:
            return self._by_id, ctx.session.session_id
        try:
            weakref.ref(ctx.session)
        except TypeError:
            return self._used, _SESSIONLESS
        return self._used, ctx.session

    def _keep(self, counts: MutableMapping[Any, tuple[str, int]], key: Any, turn: str, used: int) -> None:
        counts[key] = (turn, used)
        if counts is self._by_id:
            self._by_id.move_to_end(key)
            while len(self._by_id) > MAX_COUNTED_SESSIONS:
                self._by_id.popitem(last=False)

    def used(self, ctx: ToolContext) -> int:
        """How much ``ctx``'s turn has taken."""
        with self._lock:
            counts, key = self._slot(ctx)
            turn, used = counts.get(key, (ctx.turn_id, 0))
        return used if turn == ctx.turn_id else 0

    def take(self, ctx: ToolContext, amount: int = 1) -> bool:
        """Count ``amount`` (one call) for ``ctx``'s turn; False, counting nothing, when that would
        count more than ``most``."""
        with self._lock:
            counts, key = self._slot(ctx)
            turn, used = counts.get(key, (ctx.turn_id, 0))
            if turn != ctx.turn_id:
                used = 0
            if used + amount > self.most:
                return False
            self._keep(counts, key, ctx.turn_id, used + amount)
        return True

    def give_back(self, ctx: ToolContext, amount: int = 1) -> None:
        """Uncount what `take` counted for a call that did nothing (the host refused it, saying so)."""
        with self._lock:
            counts, key = self._slot(ctx)
            turn, used = counts.get(key, (None, 0))
            if turn == ctx.turn_id and used:
                self._keep(counts, key, turn, max(used - amount, 0))
