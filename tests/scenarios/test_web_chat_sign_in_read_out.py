"""The web chat's sign-in dialog (index.html, live.js) as a screen reader and a keyboard meet it, in a real headless
chromium against the adapter alone with a token: what the dialog and its field are called, that a refused token is
said at the field, and that Escape cannot take the dialog away."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.scenarios.test_web_chat_accessibility import ax_nodes
from tests.web_client import Intake, chat_alone

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

TOKEN = "sign-in-token-0123456789"
REFUSED = "That token was not accepted."


@pytest_asyncio.fixture(loop_scope="session")
async def base(tmp_path) -> AsyncIterator[str]:
    async with chat_alone(Intake(), tmp_path / "files", token=TOKEN) as (_, base):
        yield base


async def heard(page: Any, role: str) -> list[tuple[str, str, str]]:
    """The nodes of ``role`` a screen reader is given: (name, description, invalid)."""
    return [(n.get("name", {}).get("value", ""), n.get("description", {}).get("value", ""),
             next((p["value"]["value"] for p in n.get("properties", []) if p["name"] == "invalid"), ""))
            for n in await ax_nodes(page) if n["role"]["value"] == role]


async def test_the_sign_in_dialog_has_a_name_and_a_refused_token_is_said_at_its_field(base, page) -> None:
    await page.goto(f"{base}/chat?chat=c1")
    await page.wait_for_selector("body[data-state=login]")
    # Unnamed, the dialog was announced as "dialog" alone as the focus went into it.
    assert [name for name, _, _ in await heard(page, "dialog")] == ["Sign in"]
    assert await heard(page, "textbox") == [("Token", "", "false")]  # the hidden refusal is not read
    await page.keyboard.type("not-the-token")
    await page.keyboard.press("Enter")
    await page.wait_for_selector("#login-error", state="visible")
    # The dialog opens again with the focus in the field: a screen reader reads the field, and heard it as at first,
    # with nothing to say the token typed had been refused.
    assert await page.evaluate("document.activeElement.id") == "token"
    assert await heard(page, "textbox") == [("Token", REFUSED, "true")]
    await page.fill("#token", TOKEN)
    await page.keyboard.press("Enter")
    await page.wait_for_selector("body[data-state=connected]")


async def test_escape_pressed_again_and_again_leaves_the_sign_in_dialog_open(base, page) -> None:
    await page.goto(f"{base}/chat?chat=c1")
    await page.wait_for_selector("body[data-state=login]")
    # Chromium lets a page refuse Escape once or twice in a row, then closes the dialog all the same: the page was left
    # saying "sign in", with no dialog to sign in with until a reload.
    for _ in range(5):
        await page.keyboard.press("Escape")
    await page.wait_for_selector("#login[open]")
    await page.wait_for_function("() => document.activeElement.id === 'token'")
    await page.keyboard.type(TOKEN)
    await page.keyboard.press("Enter")
    await page.wait_for_selector("body[data-state=connected]")
