"""Transcriber against FakeOpenAIServer's audio/transcriptions: the official SDK over loopback."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from aiohttp import web

from agent import ModelError
from agent.models._suspend import TICK
from agent.models.transcription import Transcriber
from agent.settings import ModelSettings, TranscriptionSettings
from agent.testing import FakeClock, FakeOpenAIServer

KEY = "sk-test-very-secret-0123456789"


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer(api_key=KEY) as s:
        yield s


def settings(server: FakeOpenAIServer, **speech) -> ModelSettings:
    return ModelSettings(provider="openai", base_url=server.base_url, api_key=KEY, max_retries=0,
                         transcription=TranscriptionSettings(**{"name": "whisper-1", **speech}))


async def test_transcribes_through_the_chat_models_endpoint_and_key(server: FakeOpenAIServer) -> None:
    server.push_transcription("  hello there \n")
    transcriber = Transcriber(settings(server, language="de"))
    try:
        assert await transcriber.transcribe(b"OggS...", filename="voice.ogg", mime_type="audio/ogg") == "hello there"
    finally:
        await transcriber.aclose()
    (sent,) = server.transcriptions
    assert (sent["model"], sent["language"], sent["filename"], sent["content_type"], sent["audio"]) == (
        "whisper-1", "de", "voice.ogg", "audio/ogg", b"OggS...")


async def test_its_own_endpoint_and_key_win(server: FakeOpenAIServer) -> None:
    model = ModelSettings(provider="openai", base_url="http://127.0.0.1:9/v1", api_key="wrong", max_retries=0,
                          transcription=TranscriptionSettings(name="w", base_url=server.base_url, api_key=KEY))
    transcriber = Transcriber(model)
    try:
        assert await transcriber.transcribe(b"a", filename="a.ogg") == "(fake transcript)"
    finally:
        await transcriber.aclose()


async def test_failures_are_model_errors_without_the_key(server: FakeOpenAIServer) -> None:
    server.push_transcription(status=500)
    transcriber = Transcriber(settings(server))
    try:
        with pytest.raises(ModelError) as caught:
            await transcriber.transcribe(b"a", filename="a.ogg")
        assert caught.value.kind == "server_error"
        bad = Transcriber(settings(server, api_key="sk-wrong-key-abcdef"))
        try:
            with pytest.raises(ModelError) as caught:
                await bad.transcribe(b"a", filename="a.ogg")
            assert caught.value.kind == "auth" and "sk-wrong-key-abcdef" not in str(caught.value)
        finally:
            await bad.aclose()
    finally:
        await transcriber.aclose()


async def test_a_password_in_the_base_url_never_in_the_log(caplog) -> None:
    caplog.set_level(logging.DEBUG)
    async with FakeOpenAIServer() as server:
        speech = TranscriptionSettings(name="w", base_url=server.base_url.replace("http://", "http://al:pw-s3cret-9@"))
        transcriber = Transcriber(ModelSettings(provider="openai", max_retries=0, transcription=speech), env={})
        try:
            assert await transcriber.transcribe(b"a", filename="a.ogg") == "(fake transcript)"
        finally:
            await transcriber.aclose()
    assert "HTTP Request: POST http://127.0.0.1:" in caplog.text
    assert "pw-s3cret-9" not in caplog.text


@pytest.mark.parametrize("key", [KEY + "\u200b", KEY + "\n"], ids=["zero_width_space", "newline"])
async def test_a_key_with_a_stray_character_fails_as_a_refused_key_naming_its_setting(server, key) -> None:
    transcriber = Transcriber(settings(server, api_key=key))
    try:
        with pytest.raises(ModelError) as caught:
            await transcriber.transcribe(b"a", filename="a.ogg")
    finally:
        await transcriber.aclose()
    assert caught.value.kind == "auth" and "model.transcription.api_key" in str(caught.value)
    assert KEY not in str(caught.value) and server.transcriptions == []


async def test_an_answer_that_takes_too_long_is_not_asked_for_again(server: FakeOpenAIServer) -> None:
    # The server had the whole upload and is still transcribing: a retry pays for it twice and, for
    # audio that simply takes longer, times out the same way.
    server.push_transcription("too late", delay=5)
    server.push_transcription("asked again")
    model = replace(settings(server, timeout_seconds=0.2), max_retries=2)
    transcriber = Transcriber(model)
    try:
        with pytest.raises(ModelError) as caught:
            await transcriber.transcribe(b"a", filename="a.ogg")
    finally:
        await transcriber.aclose()
    assert caught.value.kind == "timeout"
    assert len(server.transcriptions) == 1


async def test_a_transcript_the_machine_slept_through_is_asked_for_again(server: FakeOpenAIServer) -> None:
    # As a model's answer (tests/agent/models/test_openai.py): after a night's suspend no transcript
    # can come on that connection any more.
    clock = FakeClock(autojump=False)
    server.push_transcription("lost in the night", delay=float("inf"))
    server.push_transcription("hello again")
    transcriber = Transcriber(replace(settings(server), max_retries=1), clock=clock)
    try:
        task = asyncio.create_task(transcriber.transcribe(b"a", filename="a.ogg"))
        await server.wait_for(lambda: server.transcriptions)
        await clock.until_sleeping()
        clock.jump(8 * 3600)
        clock.advance(TICK)
        await server.wait_for(lambda: len(server.transcriptions) == 2, timeout=10)
        assert await task == "hello again"
    finally:
        await transcriber.aclose()
    assert len(server.transcriptions) == 2


async def test_an_answer_nested_too_deep_is_a_malformed_one_not_a_crash() -> None:
    async def deep(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(text="[" * 100_000 + "]" * 100_000, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/audio/transcriptions", deep)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base_url = f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    transcriber = Transcriber(ModelSettings(provider="openai", base_url=base_url, max_retries=0,
                                            transcription=TranscriptionSettings(name="w")), env={})
    try:
        with pytest.raises(ModelError) as caught:
            await transcriber.transcribe(b"a", filename="a.ogg")
    finally:
        await transcriber.aclose()
        await runner.cleanup()
    assert caught.value.kind == "malformed"


def test_a_name_is_required() -> None:
    with pytest.raises(ValueError, match="model.transcription.name"):
        Transcriber(ModelSettings())
