"""The operator console behind a reverse proxy that publishes it under a path prefix and strips it
(`tests.prefix_proxy`), in a real headless chromium: at ``/sb/console`` (with or without the trailing slash) it
loads its files, signs in from the link, shows a running turn and stops it, every request under ``/sb/``. Absolute
paths (``/console/api/...``) went to the proxy's root. Every wait is for something on a page, never for time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.prefix_proxy import PrefixProxy
from tests.web_client import type_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

TOKEN = "console-token-0123456789abcdef"


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


@pytest.mark.parametrize("address", ["/console", "/console/"])
async def test_the_consoles_stop_button_works_under_a_proxys_path_prefix(chat, page, address) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, server={"console_token": TOKEN},
                     model={"demo": {"child_steps": 1, "step_seconds": 0.05}})
    async with PrefixProxy(web.base, "/sb") as proxy:
        console = await page.context.new_page()
        await console.goto(f"{proxy.url}{address}#token={TOKEN}")
        assert proxy.strays == []
        await console.wait_for_selector("body[data-state=connected]")
        await page.goto(f"{proxy.url}/chat?chat=c1")
        await page.wait_for_selector("body[data-state=connected]")
        await type_message(page, "Compare these:\n- [stall] apples\n- [stall] pears")
        await console.wait_for_selector("#work .child[data-state=RUNNING] >> text=pears")
        posted: list[str] = []
        console.on("request", lambda request: posted.append(request.url) if request.method == "POST" else None)
        console.once("dialog", lambda dialog: dialog.accept())
        await console.locator("#work .turn-head").get_by_role("button", name="Stop").click()
        reply = await page.wait_for_selector("[data-kind=reply]")
        assert await reply.get_attribute("data-text") == "(Stopped from the operator console.)"
        await console.wait_for_selector("#work .turn", state="detached")
        assert len(posted) == 1 and posted[0].startswith(f"{proxy.url}/console/api/turns/")
        assert posted[0].endswith("/stop")
        assert proxy.strays == []
