"""`SessionRegistry` changes that can fail half-way: building a session's new agent or its new
delegate_task fails before anything of the session, stored or in memory, has changed."""

from __future__ import annotations

import pytest

from agent import AgentSession, Tool
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.session_registry import SessionRegistry
from gateway.sessions import WorkItem
from gateway.store import GatewayStore


class Broken(Exception):
    pass


class Builds:
    """The registry's ``new_agent`` and ``delegate_for``, which fail while ``failing``."""

    def __init__(self) -> None:
        self.failing = False

    def delegate_for(self, mode: str, backend: str) -> Tool:
        if self.failing:
            raise Broken(backend)
        return Tool("delegate_task", f"through {backend}", {"type": "object"}, lambda args, ctx: "", "delegation")

    def new_agent(self, session_id: str, mode: str, chat: tuple, backend: str) -> AgentSession:
        tools = {"delegate_task": self.delegate_for(mode, backend)}
        return AgentSession(model=ScriptedModel({}), tools=tools, session_id=session_id)


@pytest.fixture
def setup(tmp_path):
    store, builds = GatewayStore(tmp_path / "state.db", clock=FakeClock()), Builds()
    registry = SessionRegistry(store.sessions, new_agent=builds.new_agent, mode_for=lambda platform: "inline",
                               clock=FakeClock(), ended=lambda *a: None, delegate_for=builds.delegate_for)
    yield store, builds, registry
    store.close()


def test_a_switch_whose_tool_cannot_be_built_leaves_the_session_on_its_backend(setup):
    store, builds, registry = setup
    session = registry.get("webhook", "c", None)
    builds.failing = True
    with pytest.raises(Broken):
        registry.choose_backend(session, "flaky", now=True)
    assert (session.backend, session.backend_choice) == ("default", None)
    assert session.agent.tools["delegate_task"].description == "through default"
    row = store.sessions.load(session.key)
    assert (row.backend, row.backend_choice) == ("default", None)


def test_a_new_generation_whose_agent_cannot_be_built_leaves_the_old_one_as_it_was(setup):
    store, builds, registry = setup
    session = registry.get("webhook", "c", None)
    old_id, old_agent = session.session_id, session.agent
    session.queue.append(WorkItem("message", "waiting", "t-1"))
    builds.failing = True
    with pytest.raises(Broken):
        registry.new_generation(session)
    assert (session.session_id, session.generation, session.agent) == (old_id, 1, old_agent)
    assert len(session.queue) == 1  # nothing was stopped or dropped either
    assert registry.by_agent(old_id) is session
    row = store.sessions.load(session.key)
    assert (row.session_id, row.generation) == (old_id, 1)
    builds.failing = False
    registry.new_generation(session)
    assert session.generation == store.sessions.load(session.key).generation == 2
    assert session.agent.session_id == session.session_id != old_id


def test_a_new_generation_counts_as_activity_so_no_sweep_evicts_the_session_it_is_about_to_queue_into(tmp_path):
    # `/new plan the trip` in a chat idle for over an hour: the generation starts, then the command awaits the
    # old generation's children's `subagent_stop` hooks before the text is queued. A retention sweep meanwhile
    # found the session idle (nothing queued yet, no child of its *new* generation) and evicted it: the text ran
    # on a session no longer in the registry (its tools could not find their chat), and the chat's next message
    # loaded a second session for the same chat, whose turns ran beside the first's.
    store, builds, clock = GatewayStore(tmp_path / "state.db", clock=FakeClock()), Builds(), FakeClock()
    registry = SessionRegistry(store.sessions, new_agent=builds.new_agent, mode_for=lambda platform: "inline",
                               clock=clock, ended=lambda *a: None, delegate_for=builds.delegate_for)
    try:
        session = registry.get("webhook", "c", None)
        clock.advance(7200)
        registry.new_generation(session)
        assert registry.evict_idle(3600, keeps_children=lambda session_id: False) == 0
        assert registry.find("webhook", "c", None) is session
        clock.advance(3600)
        assert registry.evict_idle(3600, keeps_children=lambda session_id: False) == 1  # idle again, it goes
    finally:
        store.close()
