"""A turn whose answer was journaled but whose end the store refused (a full disk: `gateway.owed_ends`),
when the process dies before the end is paid: the next start runs the turn again (it may have delegated,
and its transcript was never stored), and the outbox keeps the first answer under its key. That run must
say nothing more: the chat has its answer, and what the run says beside its tools, or "typing…", would
come after it."""

from __future__ import annotations

import asyncio

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_dead_letters import execute, killed_now
from tests.gateway.test_refused_end_marks import REFUSE_SETTLE
from tests.polling import until

TOOL = {"name": "memory", "arguments": "{}"}  # any call: the model speaks beside it


def looking(*interims: str) -> list[dict]:
    return [*({"tool_calls": [TOOL], "text": text} for text in interims), {"text": f"answer after {len(interims)}"}]


async def died_with_its_end_owed(tmp_path, gateways, config, chat: RecordingAdapter, model: ScriptedModel) -> None:
    """"hello" answered while its settling is refused, then the state a SIGKILL leaves, the store taking writes."""
    gateway = await gateways(config, [chat], model=model)
    gateway.store.db.write(REFUSE_SETTLE["message"])
    await chat.say("hello", event_id="ev-1")
    await chat.wait_for(lambda: "answer after 1" in chat.texts())
    await until(lambda: not gateway.sessions.get("chat", "c1", None).running)
    assert gateway.sessions.get("chat", "c1", None).owed
    await gateway.store.durable()
    restore = killed_now(tmp_path)  # the end still owed
    await gateway.stop(grace=0)
    restore()
    execute(tmp_path, "DROP TRIGGER refuse")


async def test_a_turn_run_again_after_a_death_while_its_answered_end_was_owed_says_nothing_more(
        tmp_path, gateways):
    config = make_config(tmp_path)
    chat = RecordingAdapter()
    await died_with_its_end_owed(tmp_path, gateways, config, chat, ScriptedModel({"parent": [looking("looking")]}))
    assert chat.texts() == ["looking", "answer after 1"]

    typed = chat.typing_calls
    model = ScriptedModel({"parent": [looking("looking again", "and more")]})
    gateway2 = await gateways(config, [chat], model=model)
    await settled(gateway2)
    assert len(model.requests) == 3  # run again: what it delegated was dropped at the start
    # Before, "and more" (the run's second interim message, a key the first run never used) came after the answer.
    assert chat.texts() == ["looking", "answer after 1"]
    assert chat.typing_calls == typed
    assert gateway2.store.inbox.settled("chat", "ev-1")


async def test_the_card_of_a_turn_run_again_after_its_answer_does_not_show_it_working_again(tmp_path, gateways):
    config = make_config(tmp_path, display={"progress": "card", "progress_delay": 0})
    chat = RecordingAdapter()
    first = ScriptedModel({"parent": [[{"wait": "first", **looking("looking")[0]}, looking("looking")[1]]]})
    first.release("first")
    await died_with_its_end_owed(tmp_path, gateways, config, chat, first)
    [card] = [m for m in chat.messages if m.kind == "notice"]
    assert card.text.startswith("✓")

    model = ScriptedModel({"parent": [[{"wait": "again", **looking("looking")[0]}, looking("looking")[1]]]})
    gateway2 = await gateways(config, [chat], model=model)
    await model.reached("again")
    for _ in range(50):  # a card due at once is rendered and sent within a few of the loop's rounds
        await asyncio.sleep(0)
    model.release("again")
    await settled(gateway2)
    # Before, it read "⏳ Thinking" again under the answer while the turn ran again.
    assert not any(edit.startswith("⏳") for edit in card.edits), card.edits
    assert card.text.startswith("✓") and sorted(m.kind for m in chat.messages) == ["interim", "notice", "reply"]
