"""The stop's last line says, in counts, what it left for the next start: answers not yet sent, messages whose
turns it cut short or that waited for their turns, subagents it interrupted, background results not delivered.
Before, an operator reading the log after ``systemctl stop`` saw ``shutting down`` and the platforms' own lines,
and learnt what was left only from the next start's ``outbox: resuming N pending message(s)``."""

from __future__ import annotations

import logging
import sqlite3

import pytest

from agent import Tool
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import RecordingAdapter, make_config, settled, start_gateway
from lifecycle import SubagentLaunchRequest
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter


def stop_lines(caplog) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records
            if r.name == "gateway.app" and r.getMessage().startswith("stopped: ")]


async def test_an_answer_telegram_holds_back_is_counted_as_not_yet_sent(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    async with FakeTelegram() as fake:
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
        gateway = await start_gateway(make_config(tmp_path), [adapter], script={"parent": [[{"text": "the answer"}]]})
        try:
            fake.fail_next("sendMessage", 429, retry_after=60)  # the answer waits a minute for its next try
            fake.push_message(42, "a question")
            await fake.wait_for(lambda: any(row.attempts for row in gateway.store.outbox.pending_messages()))
        finally:
            await gateway.stop(grace=0.2)
    assert fake.messages.get("42", []) == []
    assert stop_lines(caplog) == [("INFO", "stopped: 1 outgoing message not yet sent (sent at the next start)")]


async def test_a_turn_cut_short_and_a_message_waiting_behind_it_are_counted(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"wait": "think"}, {"text": "too late"}]]})
    gateway = await start_gateway(make_config(tmp_path, display={"busy_input_mode": "queue"}), [chat], model=model)
    try:
        await chat.say("a long question")
        await model.reached("think")
        await chat.say("and another")  # queued behind the running turn
    finally:
        await gateway.stop(grace=0)
    assert stop_lines(caplog) == [("INFO", "stopped: 1 message of a turn cut short (answered at the next start), "
                                           "1 message waiting for its turn (answered at the next start)")]


@pytest.mark.parametrize(("on_restart", "then"), [("report", "reported to their chats"), ("resume", "resumed")])
async def test_a_background_subagent_interrupted_is_counted_with_what_the_next_start_does(tmp_path, caplog,
                                                                                         on_restart, then):
    caplog.set_level(logging.INFO)
    chat = RecordingAdapter()
    model = ScriptedModel({
        "parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "dig"}}]}, {"text": "on it"}]],
        "leaf": [[{"wait": "dig"}, {"text": "found it"}]]})
    config = make_config(tmp_path, delegation={"gateway_mode": "background"}, lifecycle={"on_restart": on_restart})
    gateway = await start_gateway(config, [chat], model=model)
    try:
        await chat.say("dig into it")
        await model.reached("dig")
        await chat.wait_for(lambda: "on it" in chat.texts())
    finally:
        await gateway.stop(grace=0)
    assert stop_lines(caplog) == [
        ("INFO", f"stopped: 1 subagent of a background delegation interrupted ({then} at the next start)")]


async def test_an_inline_subagent_ends_with_its_turn_and_is_not_counted_apart(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    chat = RecordingAdapter()
    model = ScriptedModel({
        "parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "dig"}}]}, {"text": "found"}]],
        "leaf": [[{"wait": "dig"}, {"text": "found it"}]]})
    gateway = await start_gateway(make_config(tmp_path, delegation={"gateway_mode": "inline"}), [chat], model=model)
    try:
        await chat.say("dig into it")
        await model.reached("dig")
    finally:
        await gateway.stop(grace=0)
    # The turn's cancellation stopped its child: the turn, run again, delegates anew.
    assert stop_lines(caplog) == [("INFO", "stopped: 1 message of a turn cut short (answered at the next start)")]


async def test_a_background_result_not_delivered_is_counted(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    chat = RecordingAdapter()
    model = ScriptedModel({
        "parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "dig"}}]}, {"text": "on it"}],
                   [{"wait": "deliver"}, {"text": "here it is"}]],  # the turn that answers the results
        "leaf": [[{"text": "found it"}]]})
    gateway = await start_gateway(make_config(tmp_path, delegation={"gateway_mode": "background"}), [chat],
                                  model=model)
    try:
        await chat.say("dig into it")
        await model.reached("deliver")
    finally:
        await gateway.stop(grace=0)
    assert stop_lines(caplog) == [
        ("INFO", "stopped: 1 background result not yet delivered (delivered at the next start)")]


async def test_a_stop_that_leaves_nothing_says_so_once(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    chat = RecordingAdapter()
    gateway = await start_gateway(make_config(tmp_path), [chat], script={"parent": [[{"text": "hello"}]]})
    await chat.say("hi")
    await settled(gateway)
    await gateway.stop(grace=0)
    await gateway.stop(grace=0)  # a second stop (a supervisor's, a test's): the first said it
    assert stop_lines(caplog) == [("INFO", "stopped: nothing left")]


async def test_a_store_that_cannot_be_read_at_the_stop_is_said_and_the_stop_ends(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    chat = RecordingAdapter()
    gateway = await start_gateway(make_config(tmp_path), [chat])

    def refused() -> dict[str, int]:
        raise sqlite3.OperationalError("disk I/O error")

    gateway.store.inbox.waiting_by_platform = refused
    await gateway.stop(grace=0)
    assert stop_lines(caplog) == [("WARNING", "stopped: what the stop left for the next start could not be read "
                                              "(OperationalError: disk I/O error)")]
    assert gateway.store.db.closed  # the stop went on to its end



async def test_a_subagent_a_plugin_launched_is_counted_apart(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "start_job", "arguments": {}}]}, {"text": "started"}]],
                           "leaf": [[{"wait": "dig"}, {"text": "found it"}]]})
    host = AgentHost(make_config(tmp_path), model=model)

    async def start_job(args, ctx) -> str:  # a plugin's tool: its child outlives the turn
        return (await host.lifecycle.launch(SubagentLaunchRequest(goal="dig"))).subagent_id

    host.tools.register(Tool("start_job", "Starts a job.", {"type": "object"}, start_job, toolset="jobs",
                             owner="jobs_plugin"))
    gateway = Gateway(host, [chat])
    try:
        await gateway.start()
        await chat.say("start the job")
        await model.reached("dig")
        await chat.wait_for(lambda: "started" in chat.texts())
    finally:
        await gateway.stop(grace=0)
    assert stop_lines(caplog) == [("INFO", "stopped: 1 other subagent interrupted")]
