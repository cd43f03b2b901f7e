"""In a group any member's /stop or /new stops the running turn, also another member's: that member is told, in a
note that quotes their message and names who stopped it, rather than their question going unanswered in silence."""

from __future__ import annotations

import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled


def waiting(request):
    """Bob's question waits for the test at ``first``."""
    return {"wait": "first", "text": "answer to bob"}


async def bobs_turn_running(tmp_path, gateways):
    chat, model = RecordingAdapter(), ScriptedModel({"parent": waiting})
    gateway = await gateways(make_config(tmp_path), [chat], model=model)
    await chat.say("start", user="u-bob", name="bob", private=False, message_id="m-bob")
    await model.reached("first")
    return chat, model, gateway


@pytest.mark.parametrize(("command", "note", "answer"), [
    ("/stop", "(Stopped by @carol's /stop.)", "Stopped the running turn."),
    ("/new", "(Ended by @carol's /new.)", "Started a new session. Delegation here is background."),
])
async def test_a_members_turn_stopped_by_another_member_tells_them_who_stopped_it(tmp_path, gateways, command, note,
                                                                                    answer):
    chat, model, gateway = await bobs_turn_running(tmp_path, gateways)
    await chat.say(command, user="u-carol", name="carol", private=False, message_id="m-carol")
    model.release("first")
    await settled(gateway)
    assert [(m.text, m.outbound.reply_to) for m in chat.messages] == [(note, "m-bob"), (answer, "m-carol")]


async def test_a_stop_from_a_member_the_platform_names_not_says_another_member(tmp_path, gateways):
    chat, model, gateway = await bobs_turn_running(tmp_path, gateways)
    await chat.say("/stop", user="U-CAROL", name=None, private=False, message_id="m-carol")  # Slack: no names
    model.release("first")
    await settled(gateway)
    assert chat.texts() == ["(Stopped by another member's /stop.)", "Stopped the running turn."]


async def test_a_name_is_not_read_as_formatting(tmp_path, gateways):
    chat, model, gateway = await bobs_turn_running(tmp_path, gateways)
    await chat.say("/stop", user="u-carol", name="_carol_", private=False, message_id="m-carol")
    model.release("first")
    await settled(gateway)
    assert chat.texts()[0] == r"(Stopped by @\_carol\_'s /stop.)"


async def test_a_member_stopping_their_own_turn_gets_the_confirmation_alone(tmp_path, gateways):
    chat, model, gateway = await bobs_turn_running(tmp_path, gateways)
    await chat.say("/stop", user="u-bob", name="bob", private=False, message_id="m-bob-2")
    model.release("first")
    await settled(gateway)
    assert chat.texts() == ["Stopped the running turn."]
