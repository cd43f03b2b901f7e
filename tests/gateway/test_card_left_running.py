"""A progress card never outlives its turn reading "⏳": also when the turn's own handling raises (a bug
meets an odd reply) and its message is tried again or set aside."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.dead_letters import APOLOGY
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import NetworkError
from tests.gateway.test_dead_letters import killed_now
from tests.gateway.test_turn_end_bugs import ODD, Odd
from tests.polling import until

CARD = {"progress": "card", "progress_delay": 3}


async def test_a_card_whose_turn_raises_at_its_end_does_not_read_as_running(tmp_path, gateways):
    chat, clock = Odd(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": [[{"wait": "go", "text": ODD}]]})
    config = make_config(tmp_path, display=CARD, inbox={"max_attempts": 1})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("odd", event_id="ev-odd")
    await model.reached("go")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: chat.kinds() == ["notice"])
    card = chat.messages[0]
    model.release("go")
    await chat.wait_for(lambda: APOLOGY in chat.texts())
    clock.advance(600)
    await settled(gateway)
    assert chat.kinds() == ["notice", "command"]  # one card, and the apology
    assert card.text == "⚠️ Failed"


async def test_a_card_whose_turn_raised_reads_the_outcome_of_its_message_tried_again(tmp_path, gateways):
    chat, clock = Odd(), FakeClock(autojump=False)
    replies = iter([{"wait": "go", "text": ODD}, {"text": "fine"}])
    model = ScriptedModel({"parent": lambda r: next(replies)})
    config = make_config(tmp_path, display=CARD, inbox={"max_attempts": 2})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("odd", event_id="ev-odd")
    await model.reached("go")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: chat.kinds() == ["notice"])
    card = chat.messages[0]
    model.release("go")
    await chat.wait_for(lambda: card.text == "⚠️ Failed")
    clock.advance(1)  # the pause before its message is tried again; answered before a card of its own is due
    await chat.wait_for(lambda: "fine" in chat.texts())
    await until(lambda: not gateway.runner.busy)
    clock.advance(600)
    await settled(gateway)
    assert chat.kinds() == ["notice", "reply"]
    assert card.text.startswith("✓ Done in")


async def test_a_card_of_a_message_set_aside_after_the_gateway_died_in_its_turn_does_not_read_as_running(
        tmp_path, gateways):
    # The gateway died while the turn ran, its card reading ⏳: charged that attempt at the next start, the message is
    # set aside (its last allowed), never run again, so nothing else would ever finalise its card.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    config = make_config(tmp_path, display=CARD, inbox={"max_attempts": 1})
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": [[{"wait": "never"}]]}), clock=clock)
    await chat.say("work", event_id="ev-deadly")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: chat.kinds() == ["notice"])
    card = chat.messages[0]
    await gateway.store.durable()
    restore = killed_now(tmp_path)

    async def dead(*args, **kw):  # what the process did after its death reached no chat
        raise NetworkError("the process is dead", method="edit")

    chat.edit = dead
    await gateway.stop(grace=0)
    restore()
    del chat.edit
    assert card.text == "⏳ Thinking — 3 s"

    model = ScriptedModel({"parent": lambda r: {"text": "not run again"}})
    gateway2 = await gateways(config, [chat], model=model, clock=FakeClock(start=clock.time() + 60))
    await chat.wait_for(lambda: APOLOGY in chat.texts())
    await settled(gateway2)
    assert model.requests == [] and chat.kinds() == ["notice", "command"]
    assert card.text == "⚠️ Failed"
