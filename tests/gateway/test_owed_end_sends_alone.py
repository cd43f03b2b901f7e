"""A turn that ended with no answer of its own, its ``send_message`` saying it all, whose end the store refused (a
full disk: `gateway.owed_ends`) when the process died: the chat saw that turn end, so the next start runs it again
quietly, as one whose answer was journaled. One cut short before it ended still runs again and answers."""

from __future__ import annotations

from pathlib import Path

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_dead_letters import execute, killed_now
from tests.gateway.test_file_sends import TakingUploads
from tests.gateway.test_owed_end_steered import died_with_a_steered_message
from tests.gateway.test_refused_end_marks import REFUSE_SETTLE
from tests.polling import until


def sends_then(message: str, *ends: dict) -> list[dict]:
    """A turn's model calls: ``send_message(message)``, then ``ends``."""
    return [{"tool_calls": [{"name": "send_message", "arguments": {"text": message}}]}, *ends]


async def died_after(tmp_path, gateways, config, chat: RecordingAdapter, model: ScriptedModel, *, shown: str,
                     owed: bool) -> None:
    """"hello" run by ``model`` until ``shown`` is in the chat (``owed``: its turn ended, its settling refused), then
    the state a SIGKILL leaves, the store taking writes."""
    gateway = await gateways(config, [chat], model=model)
    if owed:
        gateway.store.db.write(REFUSE_SETTLE["message"])
    await chat.say("hello", event_id="ev-1")
    await chat.wait_for(lambda: shown in chat.texts())
    if owed:
        await until(lambda: not gateway.sessions.get("chat", "c1", None).running)
        assert gateway.sessions.get("chat", "c1", None).owed
    await gateway.store.durable()
    restore = killed_now(tmp_path)
    await gateway.stop(grace=0)
    restore()
    if owed:
        execute(tmp_path, "DROP TRIGGER refuse")


async def test_a_turn_that_said_it_all_with_send_message_runs_again_quietly_after_a_death_owing_its_end(
        tmp_path, gateways):
    config = make_config(tmp_path)
    chat = RecordingAdapter()
    first = ScriptedModel({"parent": [sends_then("on my way", {"text": ""})]})
    await died_after(tmp_path, gateways, config, chat, first, shown="on my way", owed=True)
    assert chat.texts() == ["on my way"]

    typed = chat.typing_calls
    again = ScriptedModel({"parent": [sends_then("on my way, again", {"text": "here it is"})]})
    gateway2 = await gateways(config, [chat], model=again)
    await settled(gateway2)
    assert len(again.requests) == 2  # run again: its transcript was never stored
    # Before, the run sent "on my way, again" and "here it is" after the turn the chat saw end.
    assert chat.texts() == ["on my way"], chat.texts()
    assert chat.typing_calls == typed
    assert gateway2.store.inbox.settled("chat", "ev-1")
    # The model reads later what the chat read as the turn's answer, not the words of the run nobody saw.
    assert gateway2.sessions.get("chat", "c1", None).agent.messages[-1] == {"role": "assistant",
                                                                            "content": "on my way"}
    assert gateway2.store.outbox.counts() == {"pending": 0, "failed": 0}


async def test_its_rerun_ending_with_no_answer_again_adds_no_note(tmp_path, gateways):
    config = make_config(tmp_path)
    chat = RecordingAdapter()
    first = ScriptedModel({"parent": [sends_then("on my way", {"text": ""})]})
    await died_after(tmp_path, gateways, config, chat, first, shown="on my way", owed=True)

    gateway2 = await gateways(config, [chat], model=ScriptedModel({"parent": [[{"text": ""}]]}))
    await settled(gateway2)
    # Before, "The model ended its turn without writing an answer" followed the message the chat had.
    assert chat.texts() == ["on my way"], chat.texts()
    assert gateway2.store.inbox.settled("chat", "ev-1")


async def test_a_turn_killed_after_its_send_message_before_it_ended_still_answers(tmp_path, gateways):
    config = make_config(tmp_path)
    chat = RecordingAdapter()
    first = ScriptedModel({"parent": [sends_then("on my way", {"wait": "forever"})]})
    await died_after(tmp_path, gateways, config, chat, first, shown="on my way", owed=False)

    again = ScriptedModel({"parent": [sends_then("on my way", {"text": "here it is"})]})
    gateway2 = await gateways(config, [chat], model=again)
    await settled(gateway2)
    assert chat.texts() == ["on my way", "here it is"], chat.texts()
    assert gateway2.store.inbox.settled("chat", "ev-1")


async def test_the_mark_the_store_refused_is_owed_with_the_end_and_recorded_once_there_is_room(tmp_path, gateways):
    config = make_config(tmp_path)
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": [sends_then("on my way", {"text": ""})]}))
    gateway.store.db.write("CREATE TRIGGER refuse BEFORE INSERT ON gateway_answered_by_sends"
                           " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    await chat.say("hello", event_id="ev-1")
    await chat.wait_for(lambda: "on my way" in chat.texts())
    await until(lambda: not gateway.sessions.get("chat", "c1", None).running)
    session = gateway.sessions.get("chat", "c1", None)
    assert session.owed and not gateway.store.inbox.settled("chat", "ev-1")
    gateway.store.db.write("DROP TRIGGER refuse")
    await until(lambda: not gateway.runner.busy)
    assert gateway.runner.pay_owed() == 0
    assert not session.owed and gateway.store.inbox.settled("chat", "ev-1")
    assert gateway.outbox.answered_by_sends(f"{gateway.store.inbox.turn_of('chat', 'ev-1')}:reply")
    assert chat.texts() == ["on my way"]


async def test_a_turn_that_said_it_all_with_a_file_sends_nothing_more_after_a_death_owing_its_end(tmp_path, gateways):
    config = make_config(tmp_path, agent={"toolsets": ["file"]})
    workspace = Path(config.state_dir) / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "a.csv").write_text("a,b\n")
    chat = TakingUploads()
    sends = {"tool_calls": [{"name": "send_file", "arguments": {"path": "a.csv"}}]}
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": [[sends, {"text": ""}]]}))
    gateway.store.db.write(REFUSE_SETTLE["message"])
    await chat.say("hello", event_id="ev-1")
    await chat.wait_for(lambda: chat.uploads == [b"a,b\n"])
    await until(lambda: not gateway.sessions.get("chat", "c1", None).running)
    await gateway.store.durable()
    restore = killed_now(tmp_path)
    await gateway.stop(grace=0)
    restore()
    execute(tmp_path, "DROP TRIGGER refuse")
    shown = chat.texts()

    gateway2 = await gateways(config, [chat], model=ScriptedModel({"parent": [[sends, {"text": "here it is"}]]}))
    await settled(gateway2)
    assert chat.uploads == [b"a,b\n"] and chat.texts() == shown
    assert gateway2.store.inbox.settled("chat", "ev-1")
    # No caption, no words: the turn's reply stays as empty as the chat saw it, not the run's "here it is".
    assert gateway2.sessions.get("chat", "c1", None).agent.messages[-1] == {"role": "assistant", "content": ""}


def says_metric_with_its_send(request) -> dict:
    """Told "use metric units" while it waits, the turn says so with ``send_message`` alone."""
    said = [str(m["content"]) for m in request.messages]
    if not any("metric" in s for s in said):
        return {"wait": "steer", "tool_calls": [{"name": "memory", "arguments": "{}"}]}
    if not any(m.get("role") == "tool" and "sent" in str(m["content"]) for m in request.messages):
        return {"tool_calls": [{"name": "send_message", "arguments": {"text": "in km, then"}}]}
    return {"text": ""}


async def test_a_message_steered_into_a_turn_that_said_it_all_with_its_sends_is_not_answered_again(
        tmp_path, gateways):
    config = make_config(tmp_path, display={"busy_input_mode": "steer"})
    chat = RecordingAdapter()
    await died_with_a_steered_message(tmp_path, gateways, config, chat, says_metric_with_its_send, "in km, then")

    again = ScriptedModel({"parent": says_metric_with_its_send})
    again.release("steer")
    gateway2 = await gateways(config, [chat], model=again)
    await settled(gateway2)
    # Before, the turn ran again visibly ("42 km"), and the steered message as a turn of its own ("metric it is").
    assert chat.texts() == ["in km, then"], chat.texts()
    assert any("use metric units" in str(m["content"]) for m in again.requests[0].messages)
    assert gateway2.store.inbox.settled("chat", "ev-1") and gateway2.store.inbox.settled("chat", "ev-2")


async def test_the_note_that_its_message_went_out_late_is_not_stored_as_the_turns_reply(tmp_path, gateways):
    config = make_config(tmp_path)
    first = ScriptedModel({"parent": [sends_then("on my way", {"text": ""})]})
    await died_after(tmp_path, gateways, config, RecordingAdapter(), first, shown="on my way", owed=True)
    # The death came before that message went out, twenty minutes before the next start.
    execute(tmp_path, "UPDATE gateway_outbox SET status='pending', created_at=created_at-1200, sent_at=NULL,"
            " message_id=NULL, attempts=0, tried=0 WHERE key LIKE '%:message:0:0'")
    chat = RecordingAdapter()
    again = ScriptedModel({"parent": [[{"wait": "late", "text": "here it is"}]]})
    gateway2 = await gateways(config, [chat], model=again)
    await chat.wait_for(lambda: "on my way" in chat.texts())
    again.release("late")
    await settled(gateway2)
    assert chat.texts()[0].startswith("⏱ Delivered late") and chat.texts()[1:] == ["on my way"], chat.texts()
    # Before, the gateway's "⏱ Delivered late: …" followed it in the turn's reply, as the model's own words.
    assert gateway2.sessions.get("chat", "c1", None).agent.messages[-1] == {"role": "assistant",
                                                                            "content": "on my way"}
