"""The Telegram command menu (setMyCommands): one command Telegram refuses loses only itself, not the menu.

The real aiogram client against FakeTelegram over loopback HTTP; the fake refuses a command list as
Telegram does (the whole list, for one bad command)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import TelegramBadRequest
from aiogram.types import BotCommand

from platforms.base import CommandSpec, Inbound
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter

LONG_NAME = "a" * 33


class Sink:
    def __init__(self) -> None:
        self.inbound: list[Inbound] = []

    async def __call__(self, inbound: Inbound) -> None:
        self.inbound.append(inbound)


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def adapter(fake: FakeTelegram) -> AsyncIterator[TelegramAdapter]:
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    yield adapter
    await adapter.stop()


@pytest.mark.parametrize(
    ("command", "description", "refusal"),
    [
        ("café", "x", "BOT_COMMAND_INVALID"),
        ("Deploy", "x", "BOT_COMMAND_INVALID"),
        ("with-dash", "x", "BOT_COMMAND_INVALID"),
        (LONG_NAME, "x", "command length must not exceed 32"),
        ("/", "x", "command must be non-empty"),
        ("ok", " ", "command description must be non-empty"),
        ("ok", "d" * 257, "command description length must not exceed 256"),
    ],
)
async def test_the_fake_refuses_the_whole_menu_for_one_bad_command(
    fake: FakeTelegram, command: str, description: str, refusal: str
) -> None:
    bot = Bot(fake.token, session=AiohttpSession(api=TelegramAPIServer.from_base(fake.base_url)))
    try:
        await bot.set_my_commands([BotCommand(command="stop", description="Stop"),
                                   BotCommand(command=command, description=description)])
        raise AssertionError("accepted")
    except TelegramBadRequest as exc:
        assert refusal in str(exc)
    finally:
        await bot.session.close()
    assert fake.commands == []


async def test_the_fake_takes_32_characters_and_256_and_at_most_100(fake: FakeTelegram) -> None:
    bot = Bot(fake.token, session=AiohttpSession(api=TelegramAPIServer.from_base(fake.base_url)))
    try:
        edge = [BotCommand(command="/" + "b_9" * 10 + "zz", description="d" * 256)]
        assert await bot.set_my_commands(edge)
        many = [BotCommand(command=f"c{i}", description="d") for i in range(101)]
        with pytest.raises(TelegramBadRequest, match="BOT_COMMANDS_TOO_MUCH"):
            await bot.set_my_commands(many)
    finally:
        await bot.session.close()


async def test_a_command_telegram_refuses_is_left_out_of_the_menu_and_still_works_typed(
    fake: FakeTelegram, adapter: TelegramAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="platforms.telegram")
    commands = [CommandSpec("stop", "Stop the current turn"), CommandSpec("café", "Order a coffee"),
                CommandSpec(LONG_NAME, "Too long a name"), CommandSpec("new", "Start a new session")]
    sink = Sink()
    await adapter.start(sink, commands)
    assert fake.commands == [{"command": "stop", "description": "Stop the current turn"},
                             {"command": "new", "description": "Start a new session"}]
    [warning] = [r.getMessage() for r in caplog.records if "menu" in r.getMessage()]
    assert f"café, {LONG_NAME};" in warning and "stop" not in warning
    fake.push_message(42, f"/{LONG_NAME} now")
    await fake.wait_for(lambda: sink.inbound)
    assert sink.inbound[0].text == f"/{LONG_NAME} now" and sink.inbound[0].is_command


async def test_descriptions_are_made_to_fit(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    commands = [CommandSpec("blank", "   "), CommandSpec("long", "word " * 100), CommandSpec("fits", " e" * 128)]
    await adapter.start(Sink(), commands)
    blank, long, fits = fake.commands
    assert blank == {"command": "blank", "description": "blank"}
    assert len(long["description"]) <= 256 and long["description"].endswith(" word…")
    assert fits["description"] == ("e " * 128).strip()


async def test_past_the_hundredth_command_the_rest_are_left_out(
    fake: FakeTelegram, adapter: TelegramAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="platforms.telegram")
    await adapter.start(Sink(), [CommandSpec(f"c{i}", f"command {i}") for i in range(102)])
    assert [c["command"] for c in fake.commands] == [f"c{i}" for i in range(100)]
    [warning] = [r.getMessage() for r in caplog.records if "menu" in r.getMessage()]
    assert "c100, c101;" in warning
