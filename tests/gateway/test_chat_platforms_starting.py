"""`switchboard chat` with Telegram enabled greets before Telegram has started: its first screen said ``Also
running here: Telegram`` while the start was still asking Telegram, and when Telegram could not be reached the chat
answered what was piped to it and ended with Telegram's failure line, the greeting never taken back. Now the first
screen says Telegram is starting, and the chat says when it runs, or that it could not start and the chat ends.
The real serve loop, Telegram's adapter (aiogram) against the loopback fake, a closed port for one not reached."""

from __future__ import annotations

import asyncio
import io
import socket
from pathlib import Path

import pytest

import platforms.telegram  # noqa: F401 - aiogram loads for seconds: at collection, not within a test's timeout
from gateway import gc_tuning, platform_factory
from gateway import serve as serving
from gateway.chat_intro import chat_intro
from gateway.errors import StartupError
from gateway.testing import make_config
from platforms.base import NetworkError
from platforms.fakes.telegram import FakeTelegram
from platforms.local import LocalAdapter
from tests.polling import until

TOKEN = "123456:TEST-token"
STARTING = "Starting here too (this chat says when they are running):\n  Telegram\n"


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def screen(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """What the terminal chat prints: `build_adapters`' own adapters, its terminal reading no input (the chat
    ends once what it started is done) and writing here."""
    out = io.StringIO()

    def adapters(config, *, local=False, on_local_exit=None, on_local_input_end=None, local_busy=None,
                 local_mode=lambda: None, local_port=lambda: None):
        terminal = LocalAdapter(input=io.StringIO(""), output=out, on_exit=on_local_exit,
                                on_input_end=on_local_input_end, busy=local_busy,
                                greeting=lambda: chat_intro(config, local_mode(), local_port()))
        return [terminal, *platform_factory.build_adapters(config)]

    monkeypatch.setattr(serving, "build_adapters", adapters)
    monkeypatch.setattr(gc_tuning, "tune_for_serving", lambda: None)  # not this test process's collector
    return out


def chat_config(tmp_path: Path, api_base: str):
    (tmp_path / "state").mkdir()  # as `switchboard chat` makes it
    return make_config(tmp_path, server={"port": 0}, platforms={"telegram": {
        "enabled": True, "token": TOKEN, "allow_all": True, "api_base": api_base}})


async def test_the_chat_says_telegram_runs_only_once_it_has_started(tmp_path, screen):
    async with FakeTelegram(TOKEN) as telegram:
        telegram.hold("getMe")
        chat = asyncio.ensure_future(serving.serve(chat_config(tmp_path, telegram.base_url), local=True))
        try:
            await until(lambda: STARTING in screen.getvalue())
            await telegram.wait_for(lambda: telegram.calls_to("getMe"))
            assert "Also running here" not in screen.getvalue() and "Running here too now" not in screen.getvalue()
            telegram.release("getMe")
            await until(lambda: "Running here too now: Telegram, the operator console.\n" in screen.getvalue())
        finally:
            assert await asyncio.wait_for(chat, 10.0) == 0


async def test_a_telegram_not_reached_is_said_in_the_chat_before_it_ends(tmp_path, screen):
    config = chat_config(tmp_path, f"http://127.0.0.1:{unused_port()}")
    with pytest.raises(NetworkError):
        await asyncio.wait_for(serving.serve(config, local=True), 10.0)
    shown = screen.getvalue()
    assert STARTING in shown and "Also running here" not in shown and "Running here too now" not in shown
    assert shown.endswith("\nTelegram could not start, so this chat ends; its last line says why.\n"), shown


@pytest.mark.parametrize("telegram", [False, True])
async def test_a_start_failed_before_any_platform_says_nothing_in_a_chat_never_greeted(tmp_path, screen, telegram):
    # A port in use fails the start before the first screen: "The gateway could not start, so this chat ends" was
    # the only line printed, of a chat never shown; with the web chat alone, of one never said to be starting.
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    (tmp_path / "state").mkdir()
    platforms = {"web": {"enabled": True}}
    if telegram:
        platforms["telegram"] = {"enabled": True, "token": TOKEN, "allow_all": True, "api_base": "http://127.0.0.1:9"}
    config = make_config(tmp_path, server={"port": held.getsockname()[1]}, platforms=platforms)
    try:
        with pytest.raises(StartupError, match="already in use"):
            await asyncio.wait_for(serving.serve(config, local=True), 10.0)
    finally:
        held.close()
    assert screen.getvalue() == ""
