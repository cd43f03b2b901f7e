"""A path under the web chat's, the webhook platform's or the console's API prefix that names nothing is
answered 404 in JSON, as every other error of those APIs (aiohttp's own was a line of plain text); the
pages and their static files keep aiohttp's 404, and a method a path does not take stays a JSON 405. Over
loopback HTTP, against the gateway's whole app (`gateway.server.build_app`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.web_client import WebChat


@pytest.fixture
async def chat(tmp_path) -> AsyncIterator[WebChat]:
    served = WebChat(tmp_path, platforms={"web": {"enabled": True},
                                          "webhook": {"enabled": True, "routes": {"alerts": {"secret": "s" * 24}}}})
    await served.start()
    yield served
    await served.stop()


@pytest.mark.parametrize("path", ["/chat/api", "/chat/api/", "/chat/api/nope", "/chat/api/messages/extra",
                                  "/chat/api/files/a/b", "/webhooks", "/webhooks/alerts/nope/x",
                                  "/console/api/nope", "/console/api/turns/t1"])
@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_an_api_path_that_names_nothing_is_a_json_404(chat, http, path, method) -> None:
    async with http.request(method, chat.base + path, json={}) as response:
        assert response.status == 404, path
        assert response.content_type == "application/json"
        assert await response.json() == {"error": "no such path in this API"}


@pytest.mark.parametrize("path", ["/chat/static/nope.js", "/chat/nope", "/nope", "/console/static/nope.js",
                                  "/chat/apiary", "/webhooksx"])
async def test_other_paths_keep_aiohttps_404(chat, http, path) -> None:
    async with http.get(chat.base + path) as response:
        assert response.status == 404, path
        assert response.content_type == "text/plain"


async def test_a_method_a_path_does_not_take_is_still_a_json_405(chat, http) -> None:
    async with http.put(chat.base + "/chat/api/messages") as response:
        assert (response.status, response.headers["Allow"]) == (405, "POST")
        assert await response.json() == {"error": "method not allowed here; this path takes POST"}
    async with http.get(chat.base + "/chat/api/history", params={"chat": "c1"}) as response:
        assert (response.status, await response.json()) == (200, {"messages": []})
