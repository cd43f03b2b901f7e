"""Messages that arrive while a chat's turn is busy, stopping or winding down: each is answered once, in order."""

from __future__ import annotations

import asyncio
import sqlite3

import aiohttp
import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.observing import served
from tests.hanging_children import HANGING_CHILDREN, hanging_child
from tests.hanging_children import delegating_parent as delegating_to_hanging_children
from tests.plugin_modules import plugin_module

SLOW_TO_CANCEL = """
import asyncio

started = asyncio.Event()
release = asyncio.Event()


async def tidy(args, ctx):
    started.set()
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        await release.wait()  # cleaning up (killing and reaping a process, say) before it gives in
        raise


def register(ctx):
    ctx.register_tool("tidy", "works until stopped, then tidies up", {"type": "object"}, tidy)
"""


async def tidying_turn(tmp_path, gateways, monkeypatch, next_answer: str):
    """A steer-mode gateway whose first turn runs a plugin's ``tidy`` tool, which works until
    cancelled and then winds down only once the test sets the plugin's ``release`` (as
    `execute_code` kills and reaps its process first); the next turn answers ``next_answer``.
    Returns (plugin, chat, gateway) once the tool runs."""
    plugin = plugin_module(tmp_path, monkeypatch, "slow_cancel_plugin", SLOW_TO_CANCEL)
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "tidy", "arguments": {}}]}, {"text": "too late"}],
                                      [{"text": next_answer}]]})
    config = make_config(tmp_path, display={"busy_input_mode": "steer"}, plugins=["slow_cancel_plugin"])
    gateway = await gateways(config, [chat], model=model)
    await chat.say("start")
    await plugin.started.wait()
    return plugin, chat, gateway


async def test_a_message_steered_while_a_stopped_turn_winds_down_gets_a_turn_of_its_own(tmp_path, gateways,
                                                                                          monkeypatch):
    plugin, chat, gateway = await tidying_turn(tmp_path, gateways, monkeypatch, "answer to the next message")
    await chat.say("/stop")
    await chat.say("do this instead")  # the stopped turn is still tidying up: it must not swallow this
    plugin.release.set()
    await chat.wait_for(lambda: "reply" in chat.kinds())
    await settled(gateway)
    assert chat.texts() == ["Stopped the running turn.", "answer to the next message"]


def answering(request):
    """Answers each message by its first line; the turn of ``start`` waits for the test at ``first``."""
    said = str(request.messages[-1]["content"]).splitlines()[0]
    if said == "start":
        return {"wait": "first", "text": "answer to start"}
    return {"text": f"answer to {said}"}


def asking_parent(request):
    last = request.messages[-1]
    if last["role"] == "user" and "deploy" in str(last["content"]):
        return {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?"}}]}
    return {"text": f"answer to {last['content']}"}


@pytest.mark.parametrize("command", ["/stop", "/new"])
async def test_a_message_arriving_with_a_stop_is_not_taken_for_the_stopped_turns_answer(tmp_path, gateways,
                                                                                          command):
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": asking_parent}))
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: len(chat.texts()) == 1)  # the question waits for an answer
    # Delivered together (Slack and the web chat hand events over concurrently): the
    # message is handled before the stopped turn has dropped its question.
    await asyncio.gather(chat.say(command), chat.say("staging"))
    await chat.wait_for(lambda: "answer to staging" in chat.texts())
    await settled(gateway)
    assert chat.texts("reply")[1:] == ["answer to staging"]


def delegating_parent(request):
    """Delegates in the background; its turn for the results looks at the files first and then has
    nothing to say (``NO_REPLY``); any other message gets an answer naming it."""
    last, before = request.messages[-1], request.messages[-2] if len(request.messages) > 1 else {}
    if last["role"] == "user" and "Background delegation results" in str(last["content"]):
        return {"wait": "results", "tool_calls": [{"name": "list_files", "arguments": {}}]}
    if last["role"] == "tool" and "list_files" in str(before):
        return {"text": "NO_REPLY"}
    if last["role"] == "tool":
        return {"text": "on it"}
    if last["role"] == "user" and "delegate" in str(last["content"]):
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "look it up"}}]}
    return {"text": f"answer to {last['content']}"}


async def test_a_message_during_a_completion_turn_is_answered_even_when_the_results_need_no_reply(tmp_path, gateways):
    chat = RecordingAdapter()
    config = make_config(tmp_path, display={"busy_input_mode": "steer", "interim_assistant_messages": True})
    model = ScriptedModel({"parent": delegating_parent, "leaf": [[{"text": "found it"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("please delegate")
    await model.reached("results")  # the turn delivering the results runs...
    await chat.say("what time is it?")  # ...when the user writes: a message of theirs is always answered
    model.release("results")
    await chat.wait_for(lambda: "answer to what time is it?" in chat.texts())
    await settled(gateway)
    assert chat.texts() == ["on it", "answer to what time is it?"]


async def test_a_message_handled_again_after_a_failure_waits_for_a_newer_ones_turn_instead_of_stopping_it(
        tmp_path, gateways):
    # The chat (like the web chat, the terminal and webhooks) does not date its messages: which came
    # first is when the gateway received them.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": answering})
    gateway = await gateways(make_config(tmp_path), [chat], model=model, clock=clock)  # busy_input_mode: interrupt
    save = gateway.store.sessions.save

    def refuse_once(row):
        gateway.store.sessions.save = save
        raise sqlite3.OperationalError("database is locked")

    gateway.store.sessions.save = refuse_once
    await chat.say("older")  # its handling fails: tried again after a pause
    await clock.until_sleeping(lasting=0.5)
    clock.advance(0.1)
    await chat.say("start")  # meanwhile the chat writes again, and that turn runs
    await model.reached("first")
    clock.advance(0.4)  # the older message is handled again while the newer one is answered
    session = next(iter(gateway.sessions))
    async with asyncio.timeout(5):  # until it is taken up: queued, or (stopping the newer) running
        while not any(e is not None and e.text == "older" for e in (*(i.event for i in session.queue),
                                                                    session.running and session.running.event)):
            await asyncio.sleep(0)
    model.release("first")
    await chat.wait_for(lambda: len(chat.texts()) == 2)
    await settled(gateway)
    assert chat.texts() == ["answer to start", "answer to older"]


async def test_a_message_steered_into_a_turn_stopped_from_the_console_still_runs(tmp_path, gateways, monkeypatch):
    # The console stops only the turn: what the chat sent after it, queued or steered and not read yet,
    # still runs, also when the stopped turn reads steers while it winds down.
    plugin, chat, gateway = await tidying_turn(tmp_path, gateways, monkeypatch, "answer to the steered message")
    await chat.say("use metric units")  # steered: the turn reads it after its tool
    async with served(gateway) as server, aiohttp.ClientSession() as http:
        turn_id = next(iter(gateway.sessions)).running.turn_id
        async with http.post(f"{server.url}/console/api/turns/{turn_id}/stop", json={}) as response:
            assert response.status == 200
        plugin.release.set()
        await chat.wait_for(lambda: len(chat.texts()) == 2)
        await settled(gateway)
    assert chat.texts() == ["(Stopped from the operator console.)", "answer to the steered message"]


@pytest.mark.parametrize("hook", ["model_call", "turn_end"])
async def test_a_message_sent_while_an_answered_turn_winds_down_does_not_cost_that_answer(tmp_path, gateways, hook):
    # Interrupt mode: a new message stops the running turn. But once the model has answered, the
    # turn only runs its hooks (a plugin's, here one that takes its time): stopping it then would
    # keep the answer in the transcript and never send it.
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"text": "the first answer"}], [{"text": "the second answer"}]]})
    gateway = await gateways(make_config(tmp_path), [chat], model=model)
    reached, release = asyncio.Event(), asyncio.Event()

    async def slow_bookkeeping(**event):
        if not release.is_set():
            reached.set()
            await release.wait()

    gateway.host.hooks.register(hook, slow_bookkeeping, owner="ledger_plugin")
    await chat.say("first")
    await reached.wait()
    await chat.say("second")
    release.set()
    await chat.wait_for(lambda: len(chat.texts("reply")) == 2)
    assert chat.texts("reply") == ["the first answer", "the second answer"]


async def test_a_message_sent_before_the_running_turn_began_waits_for_it_instead_of_stopping_it(tmp_path, gateways):
    # Both sent while the gateway was down, and handed over back to back after the restart (a platform's
    # catch-up): the user never saw the first one's turn begin, and must not lose its answer to the second.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": answering})
    gateway = await gateways(make_config(tmp_path), [chat], model=model, clock=clock)  # busy_input_mode: interrupt
    await chat.say("start", sent_at=clock.time() - 60)
    await model.reached("first")
    await chat.say("and check the logs", sent_at=clock.time() - 59)
    model.release("first")
    await chat.wait_for(lambda: "answer to and check the logs" in chat.texts())
    await settled(gateway)
    assert chat.texts() == ["answer to start", "answer to and check the logs"]


async def test_a_message_the_platform_dates_to_the_whole_second_before_the_turn_began_still_stops_it(
        tmp_path, gateways):
    # Telegram dates a message in whole seconds: one written just after the turn began may carry a date
    # just before it. The user saw the turn working and wrote again: it is stopped, as ever.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False, start=1_700_000_000.6)
    model = ScriptedModel({"parent": answering})
    gateway = await gateways(make_config(tmp_path), [chat], model=model, clock=clock)  # busy_input_mode: interrupt
    await chat.say("start", sent_at=1_700_000_000.0)
    await model.reached("first")
    clock.advance(0.2)
    await chat.say("never mind", sent_at=1_700_000_000.0)
    await chat.wait_for(lambda: "answer to never mind" in chat.texts())
    model.release("first")
    await settled(gateway)
    assert chat.texts() == ["answer to never mind"]


def trip_planner(request):
    """Delegates to hanging children when asked; the turn planning the trip waits for the test at ``trip``."""
    said = str(request.messages[-1]["content"])
    if "plan the trip" in said:
        return {"wait": "trip", "text": "the trip is planned"}
    if "hotel" in said:
        return {"text": "the hotel is booked"}
    return delegating_to_hanging_children(request)


@pytest.mark.parametrize("hooks_take", [5.0, 0.5])
async def test_a_message_received_while_new_withdraws_the_children_waits_for_the_turn_of_the_text_after_it(
        tmp_path, gateways, hooks_take):
    # The web chat, the terminal and webhooks date no message: which was sent before a turn began is as
    # the gateway received it. `/new plan the trip` waits for the `subagent_stop` hooks of the children it
    # withdraws before its text's turn begins; the message the user sent meanwhile must not stop that turn.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": trip_planner, "leaf": hanging_child})
    config = make_config(tmp_path, lifecycle={"max_running": 1})  # the second child waits for a slot: withdrawn
    gateway = await gateways(config, [chat], model=model, clock=clock)  # busy_input_mode: interrupt
    reached, release = asyncio.Event(), asyncio.Event()

    async def slow_bookkeeping(**event):
        reached.set()
        await release.wait()

    gateway.host.hooks.register("subagent_stop", slow_bookkeeping, owner="ledger_plugin")
    await chat.say("please delegate")
    await model.reached(HANGING_CHILDREN["tasks"][0]["goal"])
    new = asyncio.ensure_future(chat.say("/new plan the trip"))
    await reached.wait()
    hotel = asyncio.ensure_future(chat.say("and book the hotel", event_id="ev-hotel"))
    async with asyncio.timeout(5):  # received: it waits for /new to be handled
        while gateway.store.inbox.received_at("chat", "ev-hotel") is None:
            await asyncio.sleep(0)
    clock.advance(hooks_take)  # the hooks take their time (a receipt has no whole-second date to allow for)
    release.set()
    await asyncio.gather(new, hotel)
    model.release("trip")
    await chat.wait_for(lambda: "the hotel is booked" in chat.texts())
    await settled(gateway)
    assert chat.texts("reply")[-2:] == ["the trip is planned", "the hotel is booked"]
