"""Plugins' plain command handlers that hang (a service with no timeout) must not stall other chats' commands."""

from __future__ import annotations

import logging

from gateway.commands import PLUGIN_COMMAND_THREADS_PER_CHAT
from gateway.testing import RecordingAdapter, make_config
from tests.plugin_modules import plugin_module
from tests.polling import until

PLUGIN = """
import threading

RELEASE = threading.Event()
STARTED = []

def status(args, context):
    STARTED.append(context["session"])
    RELEASE.wait(30)
    return "the status"

def register(ctx):
    ctx.register_command("status", status)
    ctx.register_command("ping", lambda args, context: "pong")
"""


async def hanging_plugin(tmp_path, monkeypatch, gateways):
    plugin = plugin_module(tmp_path, monkeypatch, "hanging_command_plugin", PLUGIN)
    chat = RecordingAdapter()
    await gateways(make_config(tmp_path, plugins=["hanging_command_plugin"]), [chat])
    return plugin, chat


async def test_one_chats_hung_commands_leave_threads_to_the_other_chats(tmp_path, monkeypatch, gateways, caplog):
    # /status asked again and again in one chat while its service hung took every plugin-command thread:
    # every other chat's plugin commands went unanswered until one returned, and nothing said why.
    plugin, chat = await hanging_plugin(tmp_path, monkeypatch, gateways)
    try:
        with caplog.at_level(logging.WARNING, logger="agent.plugins"):
            for _ in range(PLUGIN_COMMAND_THREADS_PER_CHAT + 3):
                await chat.say("/status", chat="busy")
            await until(lambda: len(plugin.STARTED) == PLUGIN_COMMAND_THREADS_PER_CHAT, timeout=5)
            await chat.say("/ping", chat="other")
            await chat.wait_for(lambda: "pong" in chat.texts())
        assert len(plugin.STARTED) == PLUGIN_COMMAND_THREADS_PER_CHAT  # the busy chat's others wait for its share
        waits = [r.getMessage() for r in caplog.records if "waits" in r.getMessage()]
        assert waits == [f"{PLUGIN_COMMAND_THREADS_PER_CHAT} plugin-command calls for {chat.name} chat busy are"
                         " running, as many as one may have; command /status (plugin hanging_command_plugin) waits"
                         " for one to end"]
    finally:
        plugin.RELEASE.set()
    await chat.wait_for(lambda: chat.texts().count("the status") == PLUGIN_COMMAND_THREADS_PER_CHAT + 3)


async def test_a_hung_command_in_each_of_many_chats_leaves_threads_to_the_next(tmp_path, monkeypatch, gateways):
    # Four chats each waiting on a hung /status took the four threads there were: a fifth chat's /ping went unanswered.
    plugin, chat = await hanging_plugin(tmp_path, monkeypatch, gateways)
    try:
        for n in range(8):
            await chat.say("/status", chat=f"waiting-{n}")
        await until(lambda: len(plugin.STARTED) == 8, timeout=5)
        await chat.say("/ping", chat="other")
        await chat.wait_for(lambda: "pong" in chat.texts())
    finally:
        plugin.RELEASE.set()
    await chat.wait_for(lambda: chat.texts().count("the status") == 8)
