"""Reading the calls a self-hosted server left in an answer's text does not hold the event loop: its guard against a
call the user pasted reads the whole of the user's message, and a megabyte made to be slow (a webhook takes one) took
about a second, every chat, heartbeat and timer of the gateway stalled meanwhile. A long message is read in a worker
thread; a short one, or an answer with no calls, where it is, without a thread."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

import agent.models.openai as openai_model
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.models._text_tool_calls import calls_in_text
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer

OFFERED = frozenset({"memory"})
TOOLS = ({"type": "function", "function": {"name": "memory", "parameters": {"type": "object"}}},)
CALL = {"name": "memory", "arguments": {"action": "add", "text": "likes tea"}}
ANSWER = f"<tool_call>{json.dumps(CALL)}</tool_call>"
SLOW = "memory[CALL_ID]x[ARGS]{} " * 40_000
"""About 1 MB that the guard reads to the end of its work allowed, each ``{}`` a read after a name."""


def _model(server: FakeOpenAIServer) -> OpenAIModel:
    return OpenAIModel(ModelSettings(provider="openai", name="qwen2.5-7b", base_url=server.base_url, max_retries=0),
                       env={})


def _asked(said: str) -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": said}], tools=TOOLS)


@pytest.fixture
def threads(monkeypatch):
    """The thread each `calls_in_text` of the model's ran on, with the length of the message it was given."""
    seen: list[tuple[int, int]] = []

    def spied(text, offered, quoted=""):
        seen.append((threading.get_ident(), len(quoted)))
        return calls_in_text(text, offered, quoted)

    monkeypatch.setattr(openai_model, "calls_in_text", spied)
    return seen


async def test_a_slow_paste_does_not_hold_the_event_loop():
    started = time.perf_counter()
    assert calls_in_text(ANSWER, OFFERED, SLOW) is not None  # read to the end of the work allowed
    parse = time.perf_counter() - started
    gaps, answered = [], asyncio.Event()

    async def ticker():
        # Until it ticks once after the answer: a read ending the call is followed by no tick of its own.
        last = time.perf_counter()
        while not answered.is_set():
            await asyncio.sleep(0.002)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async with FakeOpenAIServer() as server:
        server.push_text("Hello.")
        server.push_text(ANSWER)
        model = _model(server)
        try:
            await model.complete(_asked("Hi"))  # the first call loads what the SDK and HTTP client load lazily
            ticking = asyncio.create_task(ticker())
            try:
                response = await model.complete(_asked(SLOW))
                answered.set()
                await ticking
            finally:
                ticking.cancel()
        finally:
            await model.aclose()
    assert [call.name for call in response.tool_calls] == ["memory"]
    # Held for the whole read, the loop's longest gap was the read's time (~0.5-1 s); the request's own JSON of a
    # megabyte, written and read on the loop, takes some milliseconds.
    assert max(gaps) < min(0.1, parse / 3), (max(gaps), parse)


async def test_a_long_message_is_read_off_the_loop_thread_and_still_guarded(threads):
    loop_thread = threading.get_ident()
    long_paste = f"Why did my bot print this?\n\n{ANSWER}\n\n" + "Some context. " * 1_000
    async with FakeOpenAIServer() as server:
        server.push_text(ANSWER)
        server.push_text(ANSWER)
        model = _model(server)
        try:
            own = await model.complete(_asked("Note that I like tea. " + "Some context. " * 1_000))
            pasted = await model.complete(_asked(long_paste))
        finally:
            await model.aclose()
    assert [call.name for call in own.tool_calls] == ["memory"] and own.text is None
    assert pasted.tool_calls == () and pasted.text == ANSWER
    guarded = [thread for thread, quoted in threads if quoted > 10_000]
    assert len(guarded) == 2 and loop_thread not in guarded


async def test_short_messages_and_answers_without_calls_are_read_on_the_loop(threads):
    loop_thread = threading.get_ident()
    async with FakeOpenAIServer() as server:
        server.push_text(ANSWER)
        server.push_text(ANSWER)
        server.push_text("Tea it is: noted {as you asked}.")
        model = _model(server)
        try:
            own = await model.complete(_asked("Note that I like tea."))
            pasted = await model.complete(_asked(f"Why? {ANSWER}"))
            prose = await model.complete(_asked("Some context. " * 1_000))
        finally:
            await model.aclose()
    assert [call.name for call in own.tool_calls] == ["memory"]
    assert pasted.tool_calls == () and pasted.text == ANSWER
    assert prose.tool_calls == () and prose.text == "Tea it is: noted {as you asked}."
    assert len(threads) == 3 and {thread for thread, _ in threads} == {loop_thread}


async def test_a_stop_while_the_thread_reads_drops_its_result(monkeypatch, caplog):
    loop, loop_thread = asyncio.get_running_loop(), threading.get_ident()
    reading, release, done = asyncio.Event(), threading.Event(), asyncio.Event()
    results = []

    def held(text, offered, quoted=""):
        if threading.get_ident() == loop_thread:
            return calls_in_text(text, offered, quoted)
        loop.call_soon_threadsafe(reading.set)
        release.wait(10)
        results.append(calls_in_text(text, offered, quoted))
        loop.call_soon_threadsafe(done.set)
        return results[-1]

    monkeypatch.setattr(openai_model, "calls_in_text", held)
    async with FakeOpenAIServer() as server:
        server.push_text(ANSWER)
        server.push_text("Noted.")
        model = _model(server)
        try:
            call = asyncio.create_task(model.complete(_asked("Note that I like tea. " + "Some context. " * 1_000)))
            await asyncio.wait_for(reading.wait(), 10)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            release.set()
            await asyncio.wait_for(done.wait(), 10)
            after = await model.complete(_asked("And coffee?"))
        finally:
            release.set()
            await model.aclose()
    assert results and results[0] is not None  # read to its end, then dropped
    assert after.text == "Noted." and after.tool_calls == ()
    assert not [record for record in caplog.records if record.levelname in ("ERROR", "CRITICAL")]
