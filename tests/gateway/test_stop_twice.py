"""A turn stopped once and still winding down (a tool tidying up after its cancellation) is not stopped again: a
second /stop stops nothing more and says so, and neither it nor a follow-up changes who stopped the turn or why."""

from __future__ import annotations

import aiohttp

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.observing import samples, served
from tests.gateway.test_busy_input import SLOW_TO_CANCEL
from tests.plugin_modules import plugin_module


async def tidying_turn(tmp_path, gateways, monkeypatch, **say):
    """A gateway (busy_input_mode interrupt) whose first turn, of ``start`` (said as ``say`` tells), runs a tool
    that winds down only once the test sets the plugin's ``release``; the next turn answers "the next answer".
    Returns (plugin, chat, gateway) once the tool runs."""
    plugin = plugin_module(tmp_path, monkeypatch, "stop_twice_plugin", SLOW_TO_CANCEL)
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "tidy", "arguments": {}}]}, {"text": "too late"}],
                                      [{"text": "the next answer"}]]})
    gateway = await gateways(make_config(tmp_path, plugins=["stop_twice_plugin"]), [chat], model=model)
    await chat.say("start", **say)
    await plugin.started.wait()
    return plugin, chat, gateway


async def test_a_second_stop_while_the_stopped_turn_winds_down_stops_nothing_and_names_the_first_stopper(
        tmp_path, gateways, monkeypatch):
    plugin, chat, gateway = await tidying_turn(tmp_path, gateways, monkeypatch, user="u-bob", name="bob",
                                               private=False, message_id="m-bob")
    await chat.say("/stop", user="u-carol", name="carol", private=False, message_id="m-carol")
    await chat.wait_for(lambda: len(chat.texts()) == 2)
    await chat.say("/stop", user="u-dave", name="dave", private=False, message_id="m-dave")  # still tidying up
    await chat.wait_for(lambda: len(chat.texts()) == 3)
    plugin.release.set()
    await settled(gateway)
    # It said "Stopped the running turn." to dave too, though his /stop stopped nothing.
    assert [(m.text, m.outbound.reply_to) for m in chat.messages] == [
        ("(Stopped by @carol's /stop.)", "m-bob"), ("Stopped the running turn.", "m-carol"),
        ("Nothing was running.", "m-dave")]


async def test_a_message_after_a_stop_while_the_turn_winds_down_leaves_it_stopped_not_superseded(
        tmp_path, gateways, monkeypatch):
    plugin, chat, gateway = await tidying_turn(tmp_path, gateways, monkeypatch)
    async with served(gateway) as server, aiohttp.ClientSession() as http:
        await chat.say("/stop")
        await chat.say("do this instead")  # interrupt mode: it stopped the stopped turn again, as "superseded"
        plugin.release.set()
        await chat.wait_for(lambda: "the next answer" in chat.texts())
        await settled(gateway)
        async with http.get(f"{server.url}/metrics") as response:
            value = samples(await response.text())
    assert chat.texts() == ["Stopped the running turn.", "the next answer"]
    assert value("switchboard_turns_total", platform="chat", kind="message", outcome="stopped") == 1
    assert value("switchboard_turns_total", platform="chat", kind="message", outcome="superseded") == 0
    assert value("switchboard_turns_total", platform="chat", kind="message", outcome="done") == 1


async def test_the_console_stopping_a_turn_a_stop_stopped_and_that_winds_down_answers_it_is_done(
        tmp_path, gateways, monkeypatch):
    plugin, chat, gateway = await tidying_turn(tmp_path, gateways, monkeypatch)
    turn_id = next(iter(gateway.sessions)).running.turn_id
    async with served(gateway) as server, aiohttp.ClientSession() as http:
        await chat.say("/stop")
        await chat.wait_for(lambda: chat.texts() == ["Stopped the running turn."])
        # The console still lists it running (it is, tidying up): its Stop is answered as done, not 409.
        async with http.post(f"{server.url}/console/api/turns/{turn_id}/stop", json={}) as response:
            assert (response.status, await response.json()) == (200, {"ok": True})
        plugin.release.set()
        await settled(gateway)
    assert chat.texts() == ["Stopped the running turn."]
