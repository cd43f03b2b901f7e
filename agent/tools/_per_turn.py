"""How many times a tool may act in one turn (`TurnBudget`): ``send_message`` and ``send_file``.

Both reach the chat at once, before the turn ends. A model caught in a loop may call one in every
answer, up to 64 calls an answer and 90 answers a turn: thousands of messages (or copies of files)
in the chat, each journaled and sent, from one turn nobody can take back. Counted by the tool, so
every host gets the bound; the gateway's own count (the outbox key's) is for idempotency, not this.
"""

from __future__ import annotations

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
    """At most ``most`` successful calls per turn of a session. Kept by session (weakly, so a closed
    session's count goes with it), for the session's latest turn only: a new turn id starts afresh.
    A turn run again after a restart counts from 0 again, as the host's idempotency keys do."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._used: weakref.WeakKeyDictionary[Any, tuple[str, int]] = weakref.WeakKeyDictionary()

    def take(self, ctx: ToolContext) -> bool:
        """Count one call of ``ctx``'s turn; False, counting nothing, once ``most`` were counted."""
        key = _key(ctx)
        turn, used = self._used.get(key, (ctx.turn_id, 0))
        if turn != ctx.turn_id:
            used = 0
        if used >= self.most:
            return False
        self._used[key] = (ctx.turn_id, used + 1)
        return True

    def give_back(self, ctx: ToolContext) -> None:
        """Uncount a call `take` counted that did nothing (the host refused it, saying so)."""
        key = _key(ctx)
        turn, used = self._used.get(key, (None, 0))
        if turn == ctx.turn_id and used:
            self._used[key] = (turn, used - 1)
