"""A turn that ended with no answer of its own (what it sent with ``send_message`` or ``send_file`` said it all),
its end owed (`gateway.owed_ends`) when the process died: run again after the start, it runs quiet, as one whose
answer was journaled does, and sends nothing more. Unlike a turn the death cut short after it sent something,
or one it found waiting for the chat's answer to a question: those run again as any other."""

from __future__ import annotations

from pathlib import Path

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.ledger_restarts import stopped
from tests.gateway.test_dead_letters import execute
from tests.gateway.test_file_sends import TakingUploads
from tests.gateway.test_quiet_rerun_edges import sending, sending_files
from tests.gateway.test_refused_end_marks import REFUSE_SETTLE
from tests.polling import until

ASKING = {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?"}}]}


async def died_ended_unanswered(tmp_path, gateways, config, chat: RecordingAdapter, model: ScriptedModel) -> list[str]:
    """"hello" handled by ``model`` while its settling is refused, then the state a SIGKILL leaves once the turn
    ended, the store taking writes. Returns what the chat had."""
    gateway = await gateways(config, [chat], model=model)
    gateway.store.db.write(REFUSE_SETTLE["message"])
    await chat.say("hello", event_id="ev-1")
    session = await until(lambda: gateway.sessions.get("chat", "c1", None))
    await until(lambda: not session.running and session.owed)
    await stopped(gateway, tmp_path, crash=True)
    execute(tmp_path, "DROP TRIGGER refuse")
    return chat.texts()


def assistant_said(gateway, *, not_in: str) -> None:
    session = gateway.sessions.get("chat", "c1", None)
    transcript = gateway.store.sessions.load(session.key).transcript
    said = [str(m.get("content")) for m in transcript if m["role"] == "assistant"]
    assert said and not any(not_in in text for text in said), said


async def test_a_turn_that_ended_with_its_messages_alone_sends_nothing_more_when_run_again(tmp_path, gateways):
    config, chat = make_config(tmp_path), RecordingAdapter()
    shown = await died_ended_unanswered(tmp_path, gateways, config, chat,
                                        ScriptedModel({"parent": [sending("on it", answer="")]}))
    assert shown == ["on it"]

    model = ScriptedModel({"parent": [sending("on it again", "and one more", answer="answer again")]})
    gateway2 = await gateways(config, [chat], model=model)
    await settled(gateway2)
    assert len(model.requests) == 3  # it did run again (it may have delegated)
    # Before, "and one more" (a key the first run never used) and "answer again" came after what the chat had.
    assert chat.texts() == ["on it"]
    assert gateway2.store.inbox.settled("chat", "ev-1")
    assistant_said(gateway2, not_in="answer again")  # the chat read no answer: nor does the next turn's model


async def test_a_turn_that_ended_with_its_file_alone_sends_nothing_more_when_run_again(tmp_path, gateways):
    config = make_config(tmp_path, agent={"toolsets": ["file"]})
    workspace = Path(config.state_dir) / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "a.csv").write_text("a,b\n")
    (workspace / "b.csv").write_text("c,d\n")
    chat = TakingUploads()
    shown = await died_ended_unanswered(tmp_path, gateways, config, chat,
                                        ScriptedModel({"parent": [sending_files("a.csv", answer="")]}))
    assert chat.uploads == [b"a,b\n"]

    model = ScriptedModel({"parent": [sending_files("a.csv", "b.csv", answer="answer again")]})
    gateway2 = await gateways(config, [chat], model=model)
    await settled(gateway2)
    assert len(model.requests) == 3
    # Before, b.csv was uploaded, and "answer again" sent, after what the chat had.
    assert chat.uploads == [b"a,b\n"] and chat.texts() == shown
    assert gateway2.store.inbox.settled("chat", "ev-1")


async def test_a_turn_cut_short_after_its_message_runs_again_and_answers(tmp_path, gateways):
    config, chat = make_config(tmp_path), RecordingAdapter()
    said = {"tool_calls": [{"name": "send_message", "arguments": {"text": "on it"}}]}
    first = ScriptedModel({"parent": [[said, {"wait": "never", "text": "lost"}]]})
    gateway = await gateways(config, [chat], model=first)
    await chat.say("hello", event_id="ev-1")
    await first.reached("never")
    await stopped(gateway, tmp_path, crash=True)
    assert chat.texts() == ["on it"]

    gateway2 = await gateways(config, [chat], model=ScriptedModel({"parent": [sending("on it", answer="done")]}))
    await chat.wait_for(lambda: "done" in chat.texts())
    await settled(gateway2)
    assert chat.texts() == ["on it", "done"]


async def test_a_turn_that_died_waiting_for_its_question_runs_again_and_answers(tmp_path, gateways):
    config, chat = make_config(tmp_path), RecordingAdapter()
    script = [sending("on it", answer="")[0], ASKING, {"text": "deploying"}]
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": [script]}))
    await chat.say("hello", event_id="ev-1")
    await chat.wait_for(lambda: len(chat.texts()) == 2)  # "on it", then the question: its message unmarked
    await stopped(gateway, tmp_path, crash=True)
    assert "Which environment?" in chat.texts()[1]

    gateway2 = await gateways(config, [chat], model=ScriptedModel({"parent": [script]}))
    await until(lambda: (s := gateway2.sessions.get("chat", "c1", None)) is not None and s.running is not None
                and s.running.question is not None)
    await chat.say("staging", event_id="ev-2")
    await chat.wait_for(lambda: "deploying" in chat.texts())
    await settled(gateway2)
    # Taken for a turn that ended with its message alone, it ran quiet: told the chat cannot be asked, its answer
    # never sent.
    assert chat.texts()[-1] == "deploying" and chat.texts().count("on it") == 1
