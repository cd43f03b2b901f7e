"""What a turn has to store of its session's transcript."""

from __future__ import annotations

from agent import AgentSession
from agent.models.scripted import ScriptedModel
from gateway.sessions import HEARD, GatewaySession, Heard
from platforms.base import Inbound


def session() -> GatewaySession:
    agent = AgentSession(model=ScriptedModel({}), system_prompt="be brief")
    return GatewaySession("k", "webhook", "c", None, agent.session_id, 1, "background", agent)


def test_unsaved_from_sees_appends_and_rewrites():
    s = session()
    assert s.unsaved_from() == 0  # never stored: everything
    s.agent.messages.append({"role": "user", "content": "a"})
    s.mark_saved()
    s.agent.messages.append({"role": "assistant", "content": "b"})
    assert s.unsaved_from() == 2  # only the turn's new message
    s.mark_saved()
    s.agent.messages[1:2] = [{"role": "user", "content": "summary"}]  # compaction, in place
    s.agent.history_version += 1
    assert s.unsaved_from() == 0
    s.mark_saved()
    s.agent.messages = [*s.agent.messages]  # a new list (a transcript loaded back)
    assert s.unsaved_from() == 0


def test_a_session_remembers_of_the_messages_it_took_only_the_newest_and_not_their_text():
    # A late /new compares when messages were sent; holding the messages themselves kept fifty texts
    # (and their attachments) per session in memory, and the gateway holds thousands of sessions.
    s = session()
    for n in range(HEARD + 5):
        s.took(Inbound("webhook", "c", None, "u", None, "x" * 10_000, f"e{n}", sent_at=float(n)))
    assert len(s.heard) == HEARD
    assert s.heard[0] == Heard("webhook", "e5", 5.0) and s.heard[-1] == Heard("webhook", f"e{HEARD + 4}", HEARD + 4.0)
