"""A chat's stored transcript across context compactions and restarts: a turn appends only the
messages it added, a turn that compacted writes the whole compacted conversation again, and a
death in between leaves what the last finished turn stored, which the replayed turn goes on from."""

from __future__ import annotations

import json
import sqlite3

from agent import ModelRequest
from agent._compaction import SUMMARY_HEADER
from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_dead_letters import killed_now

COMPACTING = {"compression": {"threshold_tokens": 400}}  # a few turns of the messages below


def stored(tmp_path) -> list[dict]:
    """The chat's transcript as another connection (the next start) reads it."""
    conn = sqlite3.connect(tmp_path / "state" / "switchboard.db")
    try:
        return [json.loads(m) for (m,) in conn.execute(
            "SELECT message FROM gateway_transcript WHERE key='chat|c1|' ORDER BY seq")]
    finally:
        conn.close()


def without_system(messages: list[dict]) -> list[dict]:
    return [m for m in messages if m["role"] != "system"]


def answering(waits_on: str | None = None):
    """Summarises as ``summary``, calls a tool for a message that asks for one, echoes the rest; waits at
    gate ``g`` for a message that starts with ``waits_on``."""

    def script(request: ModelRequest) -> dict:
        if request.role == "compactor":
            return {"text": "summary"}
        last = request.messages[-1]
        content = str(last.get("content"))
        if waits_on is not None and content.startswith(waits_on):
            return {"wait": "g", "text": "never sent"}
        if last["role"] == "user" and "tool" in content:
            return {"tool_calls": [{"name": "memory", "arguments": {"action": "read"}}]}
        return {"text": f"echo {content[:3]}"}

    return script


async def test_each_turn_stores_the_conversation_as_it_stands_compacted_or_not(tmp_path, gateways):
    config = make_config(tmp_path, **COMPACTING)
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], script={"*": answering()})
    versions = []
    for i in range(7):
        await chat.say(f"m{i} " + "x" * 700 + (" tool" if i % 3 == 1 else ""))
        await chat.wait_for(lambda: len(chat.texts("reply")) == i + 1)
        await settled(gateway)
        await gateway.store.durable()
        session = next(iter(gateway.sessions))
        versions.append(session.agent.history_version)
        assert without_system(stored(tmp_path)) == without_system(session.agent.messages), i
    assert versions[0] == 0 and versions[-1] >= 2  # appended at first, compacted (and rewritten) since
    kept = session.agent.messages
    await gateway.stop(grace=0)

    again = await gateways(config, [RecordingAdapter()], script={"*": answering()})
    restored = again.sessions.get("chat", "c1", None).agent.messages
    assert without_system(restored) == without_system(kept) and restored[1]["content"].startswith(SUMMARY_HEADER)


async def test_a_death_after_a_turn_compacted_leaves_what_the_last_turn_stored(tmp_path, gateways):
    config = make_config(tmp_path, **COMPACTING)
    chat = RecordingAdapter()
    model = ScriptedModel({"*": answering(waits_on="m3")})
    gateway = await gateways(config, [chat], model=model)
    for i in range(3):
        await chat.say(f"m{i} " + "x" * 700)
        await chat.wait_for(lambda: len(chat.texts("reply")) == i + 1)
    await settled(gateway)
    await gateway.store.durable()
    before = stored(tmp_path)
    await chat.say("m3 " + "x" * 700)
    await model.reached("g")
    session = next(iter(gateway.sessions))
    assert session.agent.history_version == 1  # compacted in memory, not stored: the turn has not ended
    await gateway.store.durable()
    restore = killed_now(tmp_path)
    await gateway.stop(grace=0)
    restore()
    assert stored(tmp_path) == before

    chat2 = RecordingAdapter()
    again = await gateways(config, [chat2], script={"*": answering()})
    await chat2.wait_for(lambda: chat2.texts("reply") == ["echo m3"])  # the turn runs again, whole
    await settled(again)
    await again.store.durable()
    messages = next(iter(again.sessions)).agent.messages
    assert without_system(stored(tmp_path)) == without_system(messages)
    assert [str(m["content"])[:3] for m in messages if m["role"] == "user"].count("m3 ") == 1
    assert messages[1]["content"].startswith(SUMMARY_HEADER)
