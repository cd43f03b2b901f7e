"""How much a tool may do in one turn (`TurnBudget`): how many times ``send_message`` and ``send_file``
act, how many bytes ``write_file`` writes.

Both reach the chat at once, before the turn ends. A model caught in a loop may call one in every
answer, up to 64 calls an answer and 90 answers a turn: thousands of messages (or copies of files)
in the chat, each journaled and sent, from one turn nobody can take back. Counted by the tool, so
every host gets the bound; the gateway's own count (the outbox key's) is for idempotency, not this.
A loop of ``write_file`` calls, likewise, put gigabytes into the workspace, filling the disk the state
database is on: it is bounded in bytes.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from agent._tools import ToolContext


class _Sessionless:
    """The key of calls a host made without a session (tests, a bare `Tool.invoke`), or with one that
    cannot be weakly referenced (a host's own plain value): their turns are told apart by id alone."""


_SESSIONLESS = _Sessionless()


def _key(ctx: ToolContext) -> Any:
    try:
        weakref.ref(ctx.session)
    except TypeError:
        return _SESSIONLESS
    return ctx.session


class TurnBudget:
    """At most ``most`` per turn of a session: successful calls, or what they took (bytes). Kept by
    session (weakly, so a closed session's count goes with it), for the session's latest turn only: a
    new turn id starts afresh. A turn run again after a restart counts from 0 again, as the host's
    idempotency keys do. Locked: plain-function tools (``write_file``) take from worker threads."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._used: weakref.WeakKeyDictionary[Any, tuple[str, int]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def used(self, ctx: ToolContext) -> int:
        """How much ``ctx``'s turn has taken."""
        with self._lock:
            turn, used = self._used.get(_key(ctx), (ctx.turn_id, 0))
        return used if turn == ctx.turn_id else 0

    def take(self, ctx: ToolContext, amount: int = 1) -> bool:
        """Count ``amount`` (one call) for ``ctx``'s turn; False, counting nothing, when that would
        count more than ``most``."""
        key = _key(ctx)
        with self._lock:
            turn, used = self._used.get(key, (ctx.turn_id, 0))
            if turn != ctx.turn_id:
                used = 0
            if used + amount > self.most:
                return False
            self._used[key] = (ctx.turn_id, used + amount)
        return True

    def give_back(self, ctx: ToolContext, amount: int = 1) -> None:
        """Uncount what `take` counted for a call that did nothing (the host refused it, saying so)."""
        key = _key(ctx)
        with self._lock:
            turn, used = self._used.get(key, (None, 0))
            if turn == ctx.turn_id and used:
                self._used[key] = (turn, max(used - amount, 0))
