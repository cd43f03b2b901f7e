"""The operator console published by a reverse proxy under another name without a trailing slash (``/ops`` for the
gateway's ``/console``), in a real headless chromium: as the web chat's page does, it goes on to ``/ops/``, where
its files, its event stream and its buttons' requests resolve under ``/ops/``; at ``/ops`` they reached the proxy's
root (``/console/static/console.js``), where nothing answered, and the page never connected."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.prefix_proxy import PrefixProxy
from tests.web_client import web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

TOKEN = "console-token-0123456789abcdef"


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_the_console_works_under_a_name_a_proxy_gives_it(chat, page) -> None:
    web = await chat(server={"console_token": TOKEN})
    async with PrefixProxy(web.base, "/ops", to="/console") as proxy:
        await page.goto(f"{proxy.origin}/ops#token={TOKEN}")
        await page.wait_for_selector("body[data-state=connected]")
        assert page.url == f"{proxy.origin}/ops/"  # the token out of the address bar, as ever
        asked = {line.split("?")[0] for line in proxy.passed}
        assert {"GET /ops/static/console.js", "GET /ops/static/console.css"} <= asked
        assert any(line.startswith("GET /ops/api/") for line in asked)
