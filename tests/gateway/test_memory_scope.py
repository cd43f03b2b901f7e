"""Whose notes the memory tool keeps: each chat its own by default, or one set for every chat."""

from __future__ import annotations

import json
import logging

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config


def remembering(request: ModelRequest) -> dict:
    """"remember X" adds a note; "recall" lists the notes and answers with what the tool said."""
    asked = next(m["content"] for m in reversed(request.messages) if m["role"] == "user")
    if request.iteration == 1:
        return {"text": f"memory: {request.messages[-1]['content']}"}
    if asked.startswith("remember "):
        note = {"action": "add", "text": asked.removeprefix("remember ")}
        return {"tool_calls": [{"name": "memory", "arguments": json.dumps(note)}]}
    return {"tool_calls": [{"name": "memory", "arguments": '{"action": "list"}'}]}


async def test_a_note_kept_in_one_chat_is_not_read_out_in_another(tmp_path, gateways):
    chat = RecordingAdapter()
    await gateways(make_config(tmp_path), [chat], script={"parent": remembering})
    await chat.say("remember my door code is 4711", chat="alice-dm")
    await chat.wait_for(lambda: chat.texts() == ["memory: added note 1"])
    await chat.say("recall", chat="group-of-strangers")
    await chat.say("recall", chat="alice-dm")
    await chat.wait_for(lambda: len(chat.texts()) == 3)
    by_chat = {m.outbound.chat_id: m.text for m in chat.messages[1:]}
    assert by_chat == {"group-of-strangers": "memory: (no notes)", "alice-dm": "memory: [1] my door code is 4711"}
    assert (tmp_path / "state" / "memory" / "chat" / "alice-dm.json").exists()


async def test_global_scope_shares_one_set_of_notes(tmp_path, gateways):
    chat = RecordingAdapter()
    await gateways(make_config(tmp_path, agent={"memory_scope": "global"}), [chat], script={"parent": remembering})
    await chat.say("remember the office closes at six", chat="c1")
    await chat.wait_for(lambda: chat.texts() == ["memory: added note 1"])
    await chat.say("recall", chat="c2")
    await chat.wait_for(lambda: chat.texts()[1:] == ["memory: [1] the office closes at six"])
    assert (tmp_path / "state" / "memory.json").exists()


async def test_chat_ids_become_safe_file_names(tmp_path, gateways):
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter("webhook")])
    memory = tmp_path / "state" / "memory"
    assert gateway.host.memory_path("webhook", "../../etc/passwd") == memory / "webhook" / "..%2F..%2Fetc%2Fpasswd.json"
    assert gateway.host.memory_path("telegram", "-1001234") == memory / "telegram" / "-1001234.json"
    long = gateway.host.memory_path("webhook", "route:" + "x" * 300)
    assert long.parent == memory / "webhook" and len(long.name) < 110
    assert long != gateway.host.memory_path("webhook", "route:" + "x" * 299)
    assert gateway.host.memory_path(None, None) == memory / "ask.json"  # `switchboard ask`, outside any chat


async def test_notes_every_chat_shared_before_are_pointed_out_at_start(tmp_path, gateways, caplog):
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "memory.json").write_text('{"version": 1, "next_id": 2, "notes": []}')
    with caplog.at_level(logging.WARNING, logger="gateway.host"):
        await gateways(make_config(tmp_path), [RecordingAdapter("telegram")])
    assert "memory.json holds notes every chat shared" in caplog.text
    assert "Set agent.memory_scope: global to share them again" in caplog.text


def adding(text: str, then: dict) -> list[list[dict]]:
    note = {"action": "add", "text": text}
    return [[{"tool_calls": [{"name": "memory", "arguments": json.dumps(note)}]}, then]]


async def test_a_note_added_by_a_turn_a_restart_runs_again_is_kept_once(tmp_path, gateways):
    config = make_config(tmp_path)
    cut_short = ScriptedModel({"parent": adding("the door code is 4711", {"wait": "killed here"})})
    first = RecordingAdapter()
    gateway = await gateways(config, [first], model=cut_short)
    await first.say("remember: door code 4711")
    await cut_short.reached("killed here")  # the note is written; the turn has not ended
    await gateway.stop(grace=0)  # so it runs again after the restart, and notes it again

    chat = RecordingAdapter()
    again = ScriptedModel({"parent": adding("door code: 4711", {"text": "noted"})})  # a model words it anew
    await gateways(config, [chat], model=again)
    await chat.wait_for(lambda: chat.texts() == ["noted"])
    notes = json.loads((tmp_path / "state" / "memory" / "chat" / "c1.json").read_text())["notes"]
    assert [(n["id"], n["text"]) for n in notes] == [(1, "door code: 4711")]
    assert [m["content"] for m in again.requests[-1].messages if m["role"] == "tool"] == ["added note 1"]
