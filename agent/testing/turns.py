"""Run code as if inside an agent turn, without a model: for tests of plugins and hosts."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

from agent._session import _ACTIVE_TURN, ActiveTurn, AgentSession


@contextlib.contextmanager
def inside_turn(session: AgentSession, turn_id: str | None = None) -> Iterator[ActiveTurn]:
    """Make ``session`` the active turn for the block (and tasks and tool threads started in it, which keep it
    after the block: held, the lifecycle API never takes it for an ended turn, as it does a real one)."""
    turn = ActiveTurn(session, turn_id or uuid.uuid4().hex[:16], held=True)
    token = _ACTIVE_TURN.set(turn)
    try:
        yield turn
    finally:
        _ACTIVE_TURN.reset(token)
