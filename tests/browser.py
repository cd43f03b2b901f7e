"""Debian's chromium, driven by Playwright, for tests of the pages the gateway serves.

One browser per test session (`browser` fixture, on the session's event loop); each test
opens its own context, so pages never share storage. Never downloads a browser: it runs
``/usr/bin/chromium`` (``apt-get install -y chromium``; `.ci/run` installs it). Without it
the browser tests skip, except under CI (``$CI`` set), where they fail: CI must run them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

CHROMIUM = os.environ.get("SWITCHBOARD_CHROMIUM", "/usr/bin/chromium")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    # This network is closed: without these, chromium keeps calling home and is refused.
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)  # fmt: skip


def _unavailable() -> str | None:
    if not (os.path.isfile(CHROMIUM) or shutil.which(CHROMIUM)):
        return f"no chromium at {CHROMIUM} (apt-get install -y chromium)"
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    return None


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[object]:
    reason = _unavailable()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests cannot run: {reason}; .ci/run must install it")
        pytest.skip(reason)
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=list(FLAGS))
        yield launched
        await launched.close()


@pytest_asyncio.fixture(loop_scope="session")
async def page(browser) -> AsyncIterator[object]:
    """A fresh page in its own context (its own localStorage and sessionStorage)."""
    context = await browser.new_context(viewport={"width": 900, "height": 700})
    context.set_default_timeout(15_000)
    page = await context.new_page()
    yield page
    await context.close()
