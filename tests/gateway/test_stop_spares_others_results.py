"""In a group a member's /stop spares another member's background results that are ready and wait for their turn,
as it spares that member's waiting messages: they are delivered as usual, also after a restart. The stopper's own,
and work still running, are stopped as before."""

from __future__ import annotations

import asyncio

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_dead_letters import killed_now

RESULTS = "[Background delegation results]"
CONFIG = {"display": {"interim_assistant_messages": True}}
SPARED = "The results of 1 finished background task another member asked for are delivered as usual."


def parent(*, stuck: bool = False):
    """Delegates on "delegate"; another message waits at ``thinking``; results are answered (held at ``answering``
    with ``stuck``)."""
    def script(request: ModelRequest) -> dict:
        last = request.messages[-1]
        content = str(last.get("content"))
        if last["role"] == "user" and content.startswith(RESULTS):
            return {"wait": "answering", "text": "here are the results"} if stuck else {"text": "here are the results"}
        if last["role"] == "user" and "delegate" in content:
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "dig"}}]}
        if last["role"] == "tool":
            return {"text": "on it"}
        return {"wait": "thinking", "text": "thought"}
    return script


async def bobs_results_wait_behind_carols_turn(tmp_path, gateways, *, stuck: bool = False, finish: bool = True):
    """Bob delegated in the group; Carol's question runs, at ``thinking``; with ``finish`` Bob's child has finished
    and its results wait for her turn to end."""
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": parent(stuck=stuck), "leaf": lambda request: {"wait": "dig", "text": "found"}})
    gateway = await gateways(make_config(tmp_path, **CONFIG), [chat], model=model)
    await chat.say("please delegate", user="u-bob", name="bob", private=False, message_id="m-bob")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await chat.say("and meanwhile?", user="u-carol", name="carol", private=False, message_id="m-carol")
    await model.reached("thinking")
    if finish:
        session = next(iter(gateway.sessions))
        (digging,) = gateway.host.children.children(session.session_id)
        model.release("dig")
        await asyncio.wait_for(gateway.host.children.wait_finished([digging.subagent_id]), 5)
    return chat, model, gateway


async def test_a_members_stop_delivers_another_members_ready_results(tmp_path, gateways):
    chat, model, gateway = await bobs_results_wait_behind_carols_turn(tmp_path, gateways)
    await chat.say("/stop", user="u-carol", name="carol", private=False, message_id="m-carol-stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    await settled(gateway)
    assert chat.texts("command") == [f"Stopped the running turn. {SPARED}"]
    assert [(m.text, m.outbound.reply_to) for m in chat.messages if m.kind == "completion"] == [
        ("here are the results", "m-bob")]
    [row] = gateway.store.delegations.latest(next(iter(gateway.sessions)).session_id, 1)
    assert row.status == "delivered"


async def test_a_members_stop_drops_their_own_ready_results(tmp_path, gateways):
    chat, model, gateway = await bobs_results_wait_behind_carols_turn(tmp_path, gateways)
    await chat.say("/stop", user="u-bob", name="bob", private=False, message_id="m-bob-stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    await settled(gateway)
    assert chat.texts("completion") == []
    assert chat.texts("command") == ["Stopped the running turn. The results of 1 finished background task will not "
                                     "be delivered: /agents lists them."]


@pytest.mark.parametrize(("command", "note", "answer"), [
    ("/stop", "(Stopped by @carol's /stop.)",
     "Stopped the running turn and 1 subagent. The subagent's partial result is listed by /agents."),
    ("/new", "(Ended by @carol's /new.)", "Started a new session and ended 1 subagent. Delegation here is background."),
])
async def test_a_members_stop_still_stops_another_members_running_subagents_and_tells_them(
        tmp_path, gateways, command, note, answer):
    chat, model, gateway = await bobs_results_wait_behind_carols_turn(tmp_path, gateways, finish=False)
    await chat.say(command, user="u-carol", name="carol", private=False, message_id="m-carol-stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    model.release("dig")
    await settled(gateway)
    assert [(m.text, m.outbound.reply_to) for m in chat.messages[1:]] == [(note, "m-bob"), (answer, "m-carol-stop")]


async def test_another_members_results_a_stop_spared_are_delivered_after_a_crash(tmp_path, gateways):
    chat, model, gateway = await bobs_results_wait_behind_carols_turn(tmp_path, gateways, stuck=True)
    await chat.say("/stop", user="u-carol", name="carol", private=False, message_id="m-carol-stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    assert chat.texts("command") == [f"Stopped the running turn. {SPARED}"]
    await model.reached("answering")  # Bob's results are being answered when the process dies
    await gateway.store.durable()
    restore = killed_now(tmp_path)
    await gateway.stop(grace=0)
    restore()
    again = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, **CONFIG), [again], model=ScriptedModel({"parent": parent()}))
    await again.wait_for(lambda: "completion" in again.kinds())
    await settled(gateway)
    assert [(m.text, m.outbound.reply_to) for m in again.messages if m.kind == "completion"] == [
        ("here are the results", "m-bob")]



@pytest.mark.parametrize(("command", "note", "answer"), [
    ("/stop", "(Stopped by @carol's /stop.)",
     "Stopped the running turn. The results of 1 finished background task will not be delivered: /agents lists them."),
    ("/new", "(Ended by @carol's /new.)", "Started a new session. The results of 1 finished background task will not "
     "be delivered. Delegation here is background."),
])
async def test_a_members_stop_tells_another_member_whose_results_it_stopped_being_answered(
        tmp_path, gateways, command, note, answer):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": parent(stuck=True), "leaf": lambda request: {"text": "found"}})
    gateway = await gateways(make_config(tmp_path, **CONFIG), [chat], model=model)
    await chat.say("please delegate", user="u-bob", name="bob", private=False, message_id="m-bob")
    await model.reached("answering")  # Bob's results are being answered: the stop ends that turn, not a delegation
    await chat.say(command, user="u-carol", name="carol", private=False, message_id="m-carol-stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    await settled(gateway)
    assert [(m.text, m.outbound.reply_to) for m in chat.messages[1:]] == [(note, "m-bob"), (answer, "m-carol-stop")]


def delegates_then_writes(request: ModelRequest) -> dict:
    """Delegates on "delegate", then holds at ``after`` before its brief reply."""
    last = request.messages[-1]
    if last["role"] == "user" and "delegate" in str(last.get("content")):
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "dig"}}]}
    return {"wait": "after", "text": "on it"}


async def test_a_members_stop_of_another_members_turn_and_its_background_work_tells_them_once(tmp_path, gateways):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": delegates_then_writes, "leaf": lambda request: {"wait": "dig", "text": "found"}})
    gateway = await gateways(make_config(tmp_path, **CONFIG), [chat], model=model)
    await chat.say("please delegate", user="u-bob", name="bob", private=False, message_id="m-bob")
    await model.reached("after")  # Bob's turn has dispatched its subagent, and goes on
    await chat.say("/stop", user="u-carol", name="carol", private=False, message_id="m-carol-stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    model.release("dig")
    model.release("after")
    await settled(gateway)
    assert [(m.text, m.outbound.reply_to) for m in chat.messages] == [
        ("(Stopped by @carol's /stop.)", "m-bob"),
        ("Stopped the running turn and 1 subagent. The subagent's partial result is listed by /agents.",
         "m-carol-stop")]


def follows_up(request: ModelRequest) -> dict:
    """Delegates on "delegate", and again on the results ("deeper"), which the note's quote must trace back."""
    last = request.messages[-1]
    content = str(last.get("content"))
    if last["role"] == "user" and content.startswith(RESULTS):
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "deeper"}}]}
    if last["role"] == "user":
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "dig"}}]}
    return {"text": "on it"}


def leaf(request: ModelRequest) -> dict:
    return {"wait": "deeper", "text": "deep"} if "deeper" in str(request.messages) else {"text": "found"}


async def test_the_note_of_a_stopped_follow_up_delegation_quotes_the_message_that_asked_for_the_first(
        tmp_path, gateways):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": follows_up, "leaf": leaf})
    gateway = await gateways(make_config(tmp_path, **CONFIG), [chat], model=model)
    await chat.say("please delegate", user="u-bob", name="bob", private=False, message_id="m-bob")
    await model.reached("deeper")  # Bob's results were answered by delegating further
    await chat.wait_for(lambda: chat.texts("completion") == ["on it"])
    await chat.say("/stop", user="u-carol", name="carol", private=False, message_id="m-carol-stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    await settled(gateway)
    assert [(m.text, m.outbound.reply_to) for m in chat.messages[2:]] == [
        ("(Stopped by @carol's /stop.)", "m-bob"),
        ("Stopped 1 subagent. The subagent's partial result is listed by /agents.", "m-carol-stop")]
