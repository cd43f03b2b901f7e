"""docs/lifecycle.md "One path for every child": the hooks of a child stopped while it waited for a place run in the
context of the turn that launched it, and a ``subagent_stop`` hook's launch there fails with ``NO_PARENT`` once that
turn has ended, as one from a task that outlived its turn does: never a launch into the dead turn, nor into the turn
of whoever stopped it (a later turn of the same chat)."""

from __future__ import annotations

import contextlib

from agent import AgentSession
from agent._session import _ACTIVE_TURN, ActiveTurn
from lifecycle import SubagentLaunchRequest
from lifecycle import SubagentState as S
from tests.lifecycle.test_hooks_stopped_before_run import _model, _service


@contextlib.contextmanager
def real_turn(session: AgentSession, turn_id: str):
    """A turn as `AgentSession.run` makes one (not held): live while it is the session's active turn."""
    turn = ActiveTurn(session, turn_id)
    session._active_turn = turn
    token = _ACTIVE_TURN.set(turn)
    try:
        yield turn
    finally:
        _ACTIVE_TURN.reset(token)
        session._active_turn = None


async def _launch_two(service, session, model):
    with real_turn(session, "turn-1"):
        ran = await service.launch(SubagentLaunchRequest(goal="runs"))
        queued = await service.launch(SubagentLaunchRequest(goal="waits for a place"))
    await model.reached("never")
    return ran, queued


async def test_the_host_stopping_a_queued_child_of_an_ended_turn_gets_no_parent(tmp_path, monkeypatch):
    service, plugins, plugin = await _service(tmp_path, monkeypatch, "dead_turn_plugin")
    try:
        model = _model()
        session = AgentSession(model=model, session_id="chat")
        ran, queued = await _launch_two(service, session, model)  # turn-1 has ended
        with real_turn(session, "turn-2"):  # the chat's next turn runs meanwhile
            view = service.host_view()
            assert await view.interrupt_child(queued.subagent_id, "stopped by /agents stop")
            assert await view.interrupt_child(ran.subagent_id, "stopped by /agents stop")
            for handle in (ran, queued):
                assert (await service.wait(handle, timeout_seconds=5)).state is S.INTERRUPTED
        assert plugin.seen == {ran.subagent_id: ("turn-1", "NO_PARENT"), queued.subagent_id: ("turn-1", "NO_PARENT")}
    finally:
        plugins.close()
        await service.close()


async def test_a_queued_child_of_an_ended_turn_cancelled_in_a_later_turn_gets_no_parent(tmp_path, monkeypatch):
    service, plugins, plugin = await _service(tmp_path, monkeypatch, "dead_turn_plugin")
    try:
        model = _model()
        session = AgentSession(model=model, session_id="chat")
        ran, queued = await _launch_two(service, session, model)
        with real_turn(session, "turn-2"):
            for handle in (queued, ran):
                assert (await service.cancel(handle)).accepted
            for handle in (ran, queued):
                assert (await service.wait(handle, timeout_seconds=5)).state is S.CANCELLED
        assert plugin.seen == {ran.subagent_id: ("turn-1", "NO_PARENT"), queued.subagent_id: ("turn-1", "NO_PARENT")}
    finally:
        plugins.close()
        await service.close()
