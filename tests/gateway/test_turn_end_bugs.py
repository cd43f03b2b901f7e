"""A turn whose end raises what the gateway does not expect (a bug meets an odd reply; not the store's
refusal, `test_turn_end_full_disk`): the turn ends all the same, its chat goes on, and its message counts
as one whose handling failed — set aside as a dead letter with its apology, not replayed at every start."""

from __future__ import annotations

import asyncio
import logging
import time

from agent.models.scripted import ScriptedModel
from gateway.dead_letters import APOLOGY
from gateway.testing import RecordingAdapter, make_config, settled
from tests.polling import until

ODD = "an odd reply"


class Odd(RecordingAdapter):
    """Measuring ``ODD`` hits a bug: splitting the reply to journal it raises."""

    def measure(self, text: str) -> int:
        if ODD in text:
            raise RuntimeError("a bug in measuring")
        return len(text)


async def test_a_turn_whose_end_raises_ends_and_its_message_is_set_aside(tmp_path, gateways, caplog):
    chat = Odd()
    model = ScriptedModel({"parent": lambda r: {"text": ODD if r.messages[-1]["content"] == "odd" else "fine"}})
    config = make_config(tmp_path, inbox={"max_attempts": 1})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("odd", event_id="ev-odd")
    await chat.wait_for(lambda: chat.texts() == [APOLOGY])
    [session] = gateway.sessions
    await until(lambda: session.running is None and not gateway.runner.busy)
    assert [letter.event_id for letter in gateway.store.dead_letters.all()] == ["ev-odd"]
    assert any("failed in the gateway (RuntimeError: a bug in measuring); the chat goes on" in m
               for m in caplog.messages)

    await chat.say("and now?")  # the chat goes on
    await chat.wait_for(lambda: chat.texts() == [APOLOGY, "fine"])
    await settled(gateway)
    assert gateway.store.inbox.settled("chat", "ev-odd")
    await gateway.stop(grace=0)

    caplog.clear()
    caplog.set_level(logging.INFO)
    chat2 = RecordingAdapter()
    model2 = ScriptedModel({"parent": lambda r: {"text": "again"}})
    gateway2 = await gateways(config, [chat2], model=model2)
    await settled(gateway2)
    assert model2.requests == [] and chat2.messages == []  # not replayed into the next start


async def test_a_turn_whose_opening_raises_leaves_no_typing_behind(tmp_path, gateways):
    chat = Odd()
    model = ScriptedModel({"parent": lambda r: {"text": "fine"}})
    gateway = await gateways(make_config(tmp_path, inbox={"max_attempts": 1}), [chat], model=model)
    # Sent an hour ago: its turn opens with a note quoting it, whose splitting hits the bug.
    await chat.say(ODD, event_id="ev-odd", sent_at=time.time() - 3600)
    await chat.wait_for(lambda: chat.texts() == [APOLOGY])
    await settled(gateway)
    assert model.requests == []
    assert all(session.running is None for session in gateway.sessions)
    assert not [task for task in asyncio.all_tasks() if task.get_coro().__name__ == "_keep_typing"]
    await chat.say("and now?")
    await chat.wait_for(lambda: chat.texts() == [APOLOGY, "fine"])
