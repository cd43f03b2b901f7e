"""A stored session whose delegation backend a later configuration no longer loads (its plugin removed or
renamed): it takes the backend its next session would, unless the chat chose the gone one, and the log names
the chat once either way. Each start is a new `SessionRegistry` on the same store, as a restart is."""

from __future__ import annotations

import logging
import sqlite3

import pytest

from agent import AgentSession, Tool
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.session_registry import SessionRegistry
from gateway.store import GatewayStore
from gateway.store.sessions import session_key


def new_agent(session_id: str, mode: str, chat: tuple, backend: str) -> AgentSession:
    tools = {"delegate_task": Tool("delegate_task", f"through {backend}", {"type": "object"}, lambda a, c: "",
                                   "delegation")}
    return AgentSession(model=ScriptedModel({}), tools=tools, session_id=session_id)


@pytest.fixture
def start(tmp_path):
    """``start(backends, configured)``: a registry as a start with these backends loaded and
    ``delegation.backend`` set to ``configured`` builds it."""
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())

    def make(backends: set[str], configured: str = "default") -> SessionRegistry:
        return SessionRegistry(store.sessions, new_agent=new_agent, mode_for=lambda platform: "inline",
                               clock=FakeClock(), ended=lambda *a: None, backend_for=lambda: configured,
                               delegate_for=lambda mode, backend: new_agent("", mode, (), backend).tools[
                                   "delegate_task"], available=lambda name: name == "default" or name in backends)

    yield make
    store.close()


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name == "gateway.sessions"]


def test_a_backend_the_chat_never_chose_gives_way_to_delegation_backend_and_the_log_names_the_chat(start, caplog):
    before = start({"model_map"}, configured="model_map")
    session = before.get("telegram", "42", "7")
    session.agent.messages.append({"role": "user", "content": "keep me"})
    before.store_transcript(session)

    after = start(set())  # advanced_delegation removed, delegation.backend back to default
    session = after.get("telegram", "42", "7")
    assert (session.backend, session.backend_choice) == ("default", None)
    assert session.agent.tools["delegate_task"].description == "through default"  # it can delegate again
    assert session.agent.messages[-1]["content"] == "keep me"  # the conversation goes on
    assert warnings(caplog) == ["telegram chat 42 thread 7: its delegation backend 'model_map' is not available (no "
                                "loaded plugin registers it); it delegates through 'default' from now on, as its next "
                                "session would (delegation.backend)"]
    caplog.clear()
    start(set()).get("telegram", "42", "7")  # stored: the next start has nothing to say
    assert warnings(caplog) == []


def test_a_chat_that_chose_another_backend_for_its_next_session_takes_it_now(start, caplog):
    before = start({"model_map", "profile_routes"}, configured="model_map")
    session = before.get("slack", "C1", None)
    before.choose_backend(session, "profile_routes", now=False)

    session = start({"profile_routes"}).get("slack", "C1", None)
    assert (session.backend, session.backend_choice) == ("profile_routes", "profile_routes")
    assert "(chosen with /delegation)" in warnings(caplog)[0]


def test_a_gone_backend_the_chat_chose_stays_and_is_logged_once(start, caplog):
    before = start({"model_map"})
    before.choose_backend(before.get("telegram", "42", None), "model_map", now=True)

    after = start(set())
    session = after.get("telegram", "42", None)
    assert (session.backend, session.backend_choice) == ("model_map", "model_map")  # the chat's own choice
    after.evict_idle(0, keeps_children=lambda session_id: False)
    session = after.get("telegram", "42", None)  # loaded again
    after.new_generation(session)  # a /new: the choice still holds
    assert session.backend == "model_map"
    assert warnings(caplog) == ["telegram chat 42: its delegation backend 'model_map' is not available (no loaded "
                                "plugin registers it); it starts no subagents until the backend is back or the chat "
                                "switches with /delegation"]


def test_a_damaged_session_whose_backend_is_gone_is_mended_and_gives_way_too(start, tmp_path, caplog):
    # Mended first (a text generation), the row skipped the gone backend's check: the chat's every delegation
    # failed, with no warning, until the session was next loaded.
    before = start({"model_map"}, configured="model_map")
    before.get("telegram", "42", None)
    conn = sqlite3.connect(tmp_path / "state.db")
    with conn:
        conn.execute("UPDATE gateway_sessions SET generation='two' WHERE key=?", (session_key("telegram", "42", None),))
    conn.close()

    session = start(set()).get("telegram", "42", None)
    assert (session.generation, session.backend) == (1, "default")
    assert session.agent.tools["delegate_task"].description == "through default"
    assert "telegram chat 42: its delegation backend 'model_map' is not available" in warnings(caplog)[0]
