"""A multi-model server (OpenRouter, LiteLLM) failing one model holds that model's calls alone
(`agent.models._outage`), and a server no connection reaches is taken for down whatever ``timeout_seconds`` is. The
real SDK over loopback sockets, through `OpenAIModel`'s own HTTP client, a manual fake clock for the probes' waits."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agent import ModelError
from agent._errors import server_down
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeClock, FakeOpenAIServer

HELLO = ModelRequest(messages=[{"role": "user", "content": "hello"}])
UPSTREAM = {"error": {"message": "Provider returned error", "type": "server_error", "param": None, "code": None}}


def model(url: str, clock: FakeClock, *, name: str = "m", timeout: float = 120.0) -> OpenAIModel:
    return OpenAIModel(ModelSettings(provider="openai", name=name, base_url=url, api_key="sk-test", max_retries=0,
                                     timeout_seconds=timeout), env={}, clock=clock)


async def fails(llm: OpenAIModel) -> ModelError:
    with pytest.raises(ModelError) as caught:
        async with asyncio.timeout(5):
            await llm.complete(HELLO)
    return caught.value


def told(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "agent.models"]


def fail_upstream(server: FakeOpenAIServer, how: str) -> None:
    if how == "503 with its own error":
        server.push_error(503, UPSTREAM)
    elif how == "503 with its own error as a string":  # TGI's, Hugging Face's: the SDK keeps the string alone
        server.push_error(503, {"error": "Model is currently loading", "error_type": "overloaded"})
    else:  # OpenRouter commits to 200 before the upstream model runs: its failure rides the body
        server.push_raw({"error": {"message": "Upstream error from the provider", "code": 502}})


@pytest.mark.parametrize("how", ["503 with its own error", "503 with its own error as a string",
                                 "200 body with code 502"])
async def test_one_models_failures_hold_no_other_model_on_its_server(how, caplog):
    # OpenRouter's or LiteLLM's 502/503 is about one upstream model: three for a subagent's model had the parent's
    # model, answering fine on the same server, held and every chat told the model was unreachable.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer(default_text="fine") as server:
        main, sub = model(server.base_url, clock, name="main"), model(server.base_url, clock, name="sub")
        try:
            with caplog.at_level(logging.WARNING, logger="agent.models"):
                for _ in range(3):
                    fail_upstream(server, how)
                    assert (await fails(sub)).kind == "server_error"
                assert (await main.complete(HELLO)).text == "fine"
                held = await fails(sub)  # that model's calls are not sent
                assert len(server.requests) == 4
                assert held.kind == "server_error" and server_down(str(held)) and "model 'sub' at" in str(held)
                clock.advance(10)
                assert (await sub.complete(HELLO)).text == "fine"  # the probe
        finally:
            await main.aclose()
            await sub.aclose()
    lines = told(caplog)
    assert len(lines) == 2 and not any("model server" in line for line in lines)
    assert lines[0].startswith("model 'sub' at ") and "taken for down" in lines[0] and "other models'" in lines[0]
    assert lines[1].startswith("model 'sub' at ") and "answering again" in lines[1]


@pytest.mark.parametrize("page", ["<html><title>503 Service Unavailable</title></html>", "no healthy upstream", ""])
async def test_a_5xx_in_no_words_of_the_server_still_holds_every_model(page):
    # A load balancer's or proxy's page (nginx, Envoy), or no body at all: the server behind it is not answering.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer() as server:
        for _ in range(3):
            server.push_raw(page, status=503, content_type="text/html" if page.startswith("<") else "text/plain")
        main, sub = model(server.base_url, clock, name="main"), model(server.base_url, clock, name="sub")
        try:
            for _ in range(3):
                await fails(sub)
            held = await fails(main)
        finally:
            await main.aclose()
            await sub.aclose()
    assert len(server.requests) == 3 and server_down(str(held)) and "model 'main'" not in str(held)


async def test_a_200_body_error_without_a_code_is_no_outage():
    # The server answered HTTP 200; with no code its error says nothing of it being down, and read as a 500 it held
    # every chat's calls.
    clock = FakeClock(autojump=False)
    async with FakeOpenAIServer(default_text="fine") as server:
        for _ in range(3):
            server.push_raw({"error": {"message": "Provider returned error"}})
        llm = model(server.base_url, clock)
        try:
            assert [(await fails(llm)).kind for _ in range(3)] == ["server_error"] * 3
            assert (await llm.complete(HELLO)).text == "fine"
        finally:
            await llm.aclose()
    assert len(server.requests) == 4


async def test_a_connection_never_opened_takes_the_server_for_down_with_a_short_timeout(unanswered_port):
    # With timeout_seconds at 10 or less the connect bound is the whole request's: the request's own bound fired
    # first, and a server no packet reaches read as one slow to answer, never taken for down.
    clock = FakeClock(autojump=False)
    llm = model(f"http://127.0.0.1:{unanswered_port}/v1", clock, timeout=0.2)
    try:
        assert [(await fails(llm)).kind for _ in range(3)] == ["timeout"] * 3
        held = await fails(llm)
    finally:
        await llm.aclose()
    assert held.kind == "timeout" and server_down(str(held))


async def test_a_tunnel_the_proxy_never_opens_takes_the_server_for_down(monkeypatch):
    # Through HTTPS_PROXY the connection is opened by a CONNECT the proxy answers once it reached the server: a
    # proxy still trying a server no packet reaches read as a server slow to answer, never taken for down.
    connects: list[bytes] = []
    writers: list[asyncio.StreamWriter] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        connects.append(await reader.readline())  # and never answers it

    listening = await asyncio.start_server(proxy, "127.0.0.1", 0)
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{listening.sockets[0].getsockname()[1]}")
    llm = model("https://model.example.invalid/v1", FakeClock(autojump=False), timeout=0.2)
    try:
        assert [(await fails(llm)).kind for _ in range(3)] == ["timeout"] * 3
        held = await fails(llm)
    finally:
        await llm.aclose()
        listening.close()
        for writer in writers:
            writer.close()
        await listening.wait_closed()
    assert held.kind == "timeout" and server_down(str(held)) and len(connects) == 3
