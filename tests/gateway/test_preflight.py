"""The checks before a start, and the state-directory lock, in-process."""

from __future__ import annotations

import os
import socket

import pytest
from aiohttp import web

from agent.settings import ModelSettings
from gateway.errors import StartupError
from gateway.preflight import check_model, check_state_dir
from gateway.state_lock import LOCK_FILE, StateLock, hold


async def test_any_http_answer_means_the_model_server_is_there(aiohttp_server):
    async def refuse(request: web.Request) -> web.Response:
        return web.json_response({"error": "bad key"}, status=401)

    app = web.Application()
    app.router.add_get("/v1/models", refuse)
    server = await aiohttp_server(app)
    await check_model(ModelSettings(provider="openai", base_url=str(server.make_url("/v1"))))


async def test_an_unreachable_model_url_is_named_without_its_credentials(unused_tcp_port):
    url = f"http://user:hunter2-pass@127.0.0.1:{unused_tcp_port}/v1"
    with pytest.raises(StartupError) as info:
        await check_model(ModelSettings(provider="openai", base_url=url, timeout_seconds=2))
    assert str(info.value).startswith(f"model.base_url: cannot reach http://127.0.0.1:{unused_tcp_port}/v1 (")
    assert "hunter2" not in str(info.value)


async def test_an_unreachable_model_url_is_named_without_a_key_in_its_query(unused_tcp_port):
    url = f"http://127.0.0.1:{unused_tcp_port}/v1?api-key=sk-in-the-query-77"
    with pytest.raises(StartupError) as info:
        await check_model(ModelSettings(provider="openai", base_url=url, timeout_seconds=2))
    assert "sk-in-the-query-77" not in str(info.value) and "api-key=***" in str(info.value), info.value


async def test_the_server_openai_base_url_names_is_the_one_checked_and_named(aiohttp_server, unused_tcp_port):
    app = web.Application()
    app.router.add_get("/v1/models", lambda request: web.json_response({"data": []}))
    server = await aiohttp_server(app)
    await check_model(ModelSettings(provider="openai"), env={"OPENAI_BASE_URL": str(server.make_url("/v1"))})
    dead = f"http://127.0.0.1:{unused_tcp_port}/v1"
    with pytest.raises(StartupError) as info:
        await check_model(ModelSettings(provider="openai", timeout_seconds=2), env={"OPENAI_BASE_URL": dead})
    assert str(info.value).startswith(f"$OPENAI_BASE_URL: cannot reach {dead} (")
    assert str(info.value).endswith("fix $OPENAI_BASE_URL (and the network or proxy between)")


async def test_other_providers_are_not_probed():
    await check_model(ModelSettings(provider="demo", base_url="http://127.0.0.1:1/v1"))


def test_the_lock_is_exclusive_names_its_holder_and_goes_with_release(tmp_path):
    first = StateLock.acquire(tmp_path)
    assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()} {socket.gethostname()}\n"
    with pytest.raises(StartupError, match=f"state directory {tmp_path} is in use by pid {os.getpid()}"):
        StateLock.acquire(tmp_path)
    first.release()
    first.release()  # idempotent
    StateLock.acquire(tmp_path).release()


def test_hold_is_for_the_process_and_idempotent(tmp_path):
    lock = hold(tmp_path)
    try:
        assert hold(tmp_path) is lock and lock.held
    finally:
        lock.release()
    assert not lock.held


def test_a_workspace_that_is_a_file(tmp_path):
    (tmp_path / "ws").write_text("x")
    with pytest.raises(StartupError, match="agent.workspace: .* is a file"):
        check_state_dir(tmp_path / "state", tmp_path / "ws")
    check_state_dir(tmp_path / "state", tmp_path / "ws2")
    assert (tmp_path / "state").is_dir() and (tmp_path / "ws2").is_dir()
