"""The operator console behind the web chat's signing-in proxy: a person the proxy signs in for the chat is no
operator. On loopback without ``server.console_token`` the console answers only this machine, and a proxy on it
that keeps the upstream ``Host`` and names no client (a bare nginx ``proxy_pass`` with ``auth_request``) passes the
chat's ``user_header`` all the same: a request carrying it came through that proxy."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.web_client import post_message, web_chats

PROXY = {"enabled": True, "user_header": "X-Forwarded-User", "allowed_users": ["alice", "bob"],
         "trusted_proxies": ["127.0.0.1"]}
BOB = {"X-Forwarded-User": "bob"}
JSON = {"Content-Type": "application/json"}


@pytest.fixture
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_a_chat_user_the_proxy_signed_in_cannot_read_or_act_through_the_console(chat, http) -> None:
    web = await chat(platforms={"web": PROXY})
    status, _ = await post_message(http, web.base, "c1", "alice's plan", key="alice-key-1",
                                   headers={"X-Forwarded-User": "alice"})
    assert status == 202
    await web.settled()
    for path in ("/console/api/state", "/console/api/events", "/metrics"):
        async with http.get(f"{web.base}{path}", headers=BOB) as response:
            body = await response.json()
            assert response.status == 403 and "server.console_token" in body["error"], path
            assert "alice" not in str(body)
    async with http.post(f"{web.base}/console/api/turns/t-1/stop", data="{}", headers={**BOB, **JSON}) as response:
        assert response.status == 403
    async with http.get(f"{web.base}/console/api/state") as response:  # the operator, on this machine
        assert response.status == 200
        assert [s["chat_id"] for s in (await response.json())["sessions"]] == ["alice:c1"]


async def test_with_its_token_the_console_answers_through_the_proxy(chat, http) -> None:
    web = await chat(platforms={"web": PROXY}, server={"port": 0, "console_token": "console-token-0123456789"})
    async with http.get(f"{web.base}/console/api/state", headers=BOB) as response:
        assert response.status == 401
    auth = {**BOB, "Authorization": "Bearer console-token-0123456789"}
    async with http.get(f"{web.base}/console/api/state", headers=auth) as response:
        assert response.status == 200
