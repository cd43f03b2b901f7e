"""The console's API answers a method a path does not take with a JSON 405 and ``Allow``, as every other error
of that API (docs/console.md): aiohttp's own was a line of plain text. Over loopback HTTP, against the gateway's
whole app (`gateway.server.build_app`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.web_client import WebChat

GET_PATHS = ["/console/api/state", "/console/api/events"]
POST_PATHS = ["/console/api/turns/t1/stop", "/console/api/children/c1/stop", "/console/api/outbox/1/retry",
              "/console/api/outbox/1/dismiss", "/console/api/dead-letters/1/retry",
              "/console/api/dead-letters/1/dismiss"]


@pytest.fixture
async def served(tmp_path) -> AsyncIterator[WebChat]:
    chat = WebChat(tmp_path)
    await chat.start()
    yield chat
    await chat.stop()


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
@pytest.mark.parametrize("path", POST_PATHS)
async def test_a_post_only_console_path_refuses_other_methods_in_json(served, http, path, method) -> None:
    await refused(http, method, served.base + path, "POST")


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "HEAD"])
@pytest.mark.parametrize("path", GET_PATHS)
async def test_a_get_only_console_path_refuses_other_methods_in_json(served, http, path, method) -> None:
    await refused(http, method, served.base + path, "GET")


async def test_the_methods_the_paths_take_still_reach_them(served, http) -> None:
    async with http.get(served.base + "/console/api/state") as response:
        assert response.status == 200
        assert "sessions" in await response.json()
    async with http.post(served.base + "/console/api/turns/t1/stop", json={}) as response:
        assert response.status == 409
        assert "error" in await response.json()
    async with http.post(served.base + "/console/api/outbox/1/nope", json={}) as response:
        assert response.status == 404  # an action it does not know is no path of the API, as before


async def refused(http, method: str, url: str, allowed: str) -> None:
    async with http.request(method, url, json={}) as response:
        assert response.status == 405, (method, url)
        assert response.headers["Allow"] == allowed
        assert response.content_type == "application/json"
        if method != "HEAD":
            assert await response.json() == {"error": f"method not allowed here; this path takes {allowed}"}
