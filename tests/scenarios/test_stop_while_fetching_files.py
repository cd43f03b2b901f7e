"""A stop that comes while a turn still fetches its message's files (the download of a large file
over a slow link, a voice note's transcription) ends the turn at once, as a stop at any other
moment does: the fetch is cancelled, the stop's confirmation is the chat's last word, the message
is settled, no model runs and nothing is left in the chat's folder. Real aiogram against FakeTelegram,
the real OpenAI provider against FakeOpenAIServer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.testing import FakeOpenAIServer
from gateway.app import Gateway
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter


@pytest.fixture
async def openai() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer(api_key="sk-test", default_text="Hello there.") as server:
        yield server


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as server:
        yield server


@pytest.fixture
async def gateways() -> AsyncIterator[list[Gateway]]:
    started: list[Gateway] = []
    yield started
    for gateway in started:
        await gateway.stop(grace=0)


async def start(tmp_path: Path, fake: FakeTelegram, openai: FakeOpenAIServer, gateways: list[Gateway],
                **model: object) -> Gateway:
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}},
                         model={"provider": "openai", "name": "fake-model", "base_url": openai.base_url,
                                "api_key": "sk-test", "max_retries": 0, **model})
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
    gateway = await start_gateway(config, [adapter])
    gateways.append(gateway)
    return gateway


def replies(fake: FakeTelegram) -> list[str]:
    return [m["text"] for m in fake.messages["42"]]


def left_in_the_folder(tmp_path: Path) -> list[Path]:
    return [p for p in (tmp_path / "state" / "workspace" / "attachments").rglob("*") if p.is_file()]


def asked(openai: FakeOpenAIServer) -> list[object]:
    return [[m for m in r["messages"] if m["role"] == "user"][-1]["content"] for r in openai.requests]


@pytest.mark.parametrize("then, answer", [("/stop", "Stopped"), ("/new", "Started a new session"),
                                          ("never mind, hello", "Hello there.")])
async def test_a_stop_while_a_file_downloads_ends_the_turn_at_once(tmp_path: Path, fake: FakeTelegram,
                                                                    openai: FakeOpenAIServer, gateways: list[Gateway],
                                                                    then: str, answer: str) -> None:
    # A large file over a slow link: the download goes on for minutes (each try, up to four).
    gateway = await start(tmp_path, fake, openai, gateways)
    fake.hold_downloads(after=1000)
    fake.push_document(42, b"x" * 200_000, "report.pdf", mime_type="application/pdf", caption="summarise this")
    await fake.wait_for(lambda: fake.downloads)
    fake.push_message(42, then)
    await fake.wait_for(lambda: replies(fake))
    await settled(gateway)  # within 5 s, the download still held: the turn waits for it no more
    (reply,) = replies(fake)
    assert reply.startswith(answer)  # the same words as a stop at any other moment
    assert asked(openai) == ([then] if answer == "Hello there." else [])  # the stopped turn ran no model
    assert gateway.store.inbox.unfinished() == []  # its message settled: no restart answers it
    assert left_in_the_folder(tmp_path) == []  # nothing half-written, no temporary file
    assert len(fake.downloads) == 1  # not tried again


async def test_a_stop_while_a_voice_note_is_transcribed_ends_the_turn_at_once(
        tmp_path: Path, fake: FakeTelegram, openai: FakeOpenAIServer, gateways: list[Gateway]) -> None:
    openai.push_transcription("please summarise my inbox", delay=float("inf"))  # a transcription that hangs
    gateway = await start(tmp_path, fake, openai, gateways, transcription={"name": "whisper-1"})
    fake.push_voice(42, b"OggS voice")
    await openai.wait_for(lambda: openai.transcriptions)
    fake.push_message(42, "/stop")
    await fake.wait_for(lambda: replies(fake))
    await settled(gateway)
    (reply,) = replies(fake)
    assert reply.startswith("Stopped") and openai.requests == []
    assert gateway.store.inbox.unfinished() == []
