"""A /stop while a turn runs again "quiet" (`RunningTurn.quiet`: the chat saw an earlier run end it) stops the run,
and what it rebuilds, but shows nothing more of the turn: its card keeps the line the chat read above its answer,
and no note of the stop goes under the turn's reply."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_owed_end_after_death import TOOL, died_with_its_end_owed, looking


def again(request) -> dict:
    return {"wait": "again", "tool_calls": [TOOL], "text": "looking"}


async def test_a_stop_during_a_quiet_rerun_leaves_the_card_the_chat_saw_end(tmp_path, gateways):
    chat = RecordingAdapter()
    first = ScriptedModel({"parent": [[{"wait": "first", **looking("looking")[0]}, looking("looking")[1]]]})
    first.release("first")
    config = make_config(tmp_path, display={"progress": "card", "progress_delay": 0})
    await died_with_its_end_owed(tmp_path, gateways, config, chat, first)
    model = ScriptedModel({"parent": again})
    gateway2 = await gateways(config, [chat], model=model)
    await model.reached("again")
    await chat.say("/stop", event_id="ev-2")
    model.release("again")
    await settled(gateway2)
    [card] = [m for m in chat.messages if m.kind == "notice"]
    # Before, it turned to "⏹ Stopped" above the answer the chat had read.
    assert card.edits == ["✓ Done in 0 s"]
    assert gateway2.store.inbox.settled("chat", "ev-1")
