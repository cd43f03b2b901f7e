"""A command typed as a message (Telegram's ``/stop``, Discord's ``!stop``, the web chat's and the terminal's) the
gateway fails on once it has recorded it: handled like any message it fails on, never dropped without a word.

A bug it trips is a failed attempt: tried again after a pause that doubles, and after ``inbox.max_attempts`` set
aside with the dead letters' apology. A refusal of the store (a full disk) is no failed attempt: tried again until
the store takes it, and then answered as it would have been. (One the gateway fails on before recording it is the
adapter's to answer: `tests.platforms.test_text_command_not_handled`.)"""

from __future__ import annotations

import pytest

from agent.testing import FakeClock
from gateway.dead_letters import APOLOGY
from gateway.testing import RecordingAdapter, make_config, settled
from tests.sqlite_errors import full_disk


@pytest.mark.parametrize("text", ["/stop", "!stop", "/new plan the trip"])
async def test_a_text_command_the_gateway_fails_on_is_tried_again_then_answered_with_the_apology(
        tmp_path, gateways, text):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "never"}]]}, clock=clock)
    tries = []

    async def trips_a_bug(session, command, inbound):
        tries.append(command.name)
        raise ValueError("a bug the command trips")

    gateway.commands.run = trips_a_bug
    await chat.say(text, chat="c9", event_id="ev-cmd")
    for pause in (0.5, 1.0):  # tried again after a pause that doubles
        await clock.until_sleeping(lasting=pause)
        assert chat.messages == []
        clock.advance(pause)
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == [APOLOGY]
    assert len(tries) == 3
    [letter] = gateway.store.dead_letters.all()
    assert (letter.event_id, letter.attempts, letter.text) == ("ev-cmd", 3, text)
    assert "a bug the command trips" in letter.error


async def test_a_text_command_the_store_refuses_is_answered_once_it_takes_it(tmp_path, gateways):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    config = make_config(tmp_path, inbox={"max_attempts": 1})
    gateway = await gateways(config, [chat], script={"parent": [[{"text": "never"}]]}, clock=clock)
    run = gateway.commands.run
    refusals = [full_disk(), full_disk()]  # more than inbox.max_attempts: not counted as failures

    async def refused_a_while(session, command, inbound):
        if refusals:
            raise refusals.pop()
        return await run(session, command, inbound)

    gateway.commands.run = refused_a_while
    await chat.say("/stop", chat="c9", event_id="ev-cmd")
    for pause in (0.5, 1.0):
        await clock.until_sleeping(lasting=pause)
        assert chat.messages == []
        clock.advance(pause)
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == ["Nothing was running."]
    assert gateway.store.dead_letters.all() == []
