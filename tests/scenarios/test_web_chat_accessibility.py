"""The web chat page (index.html, chat.css, chat.js) as a screen reader and a keyboard meet it, in a real headless
chromium against the adapter alone: the page's landmarks as the accessibility tree has them, that the agent is
working told once a turn, and the controls' names, the focus ring and the layout at 200% zoom.

What is "heard" is each addition to the page whose nearest live region reads it out, as
`test_web_chat_catch_up_read_out` records it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scenarios.test_web_chat_catch_up_read_out import LISTEN
from tests.scenarios.test_web_chat_screen_reader import reconnect_after, said, served  # noqa: F401
from tests.web_client import open_chat

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

WORKING = "The agent is working."
CONTROLS = {"button", "link", "textbox", "combobox", "checkbox"}
FOCUSED = """() => { const e = document.activeElement;
  return [e.id || e.textContent, getComputedStyle(e).outlineStyle !== "none" && e.matches(":focus-visible")]; }"""


async def ax_nodes(page: Any) -> list[dict[str, Any]]:
    """Chromium's accessibility tree of the page, the nodes a screen reader is given (not the ignored ones)."""
    cdp = await page.context.new_cdp_session(page)
    try:
        return [n for n in (await cdp.send("Accessibility.getFullAXTree"))["nodes"] if not n.get("ignored")]
    finally:
        await cdp.detach()


async def test_the_log_and_the_message_box_are_in_the_pages_main_landmark(served, page) -> None:  # noqa: F811
    _, _, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    roles = [n["role"]["value"] for n in await ax_nodes(page)]
    # The list was <main role="log">: its role replaced main's, so the page had no main landmark for a screen
    # reader's "go to main" (NVDA's D), and the message box and the working line stood outside every landmark.
    assert roles.count("main") == 1
    main = page.get_by_role("main")
    assert await main.get_by_role("log", name="Messages").count() == 1
    assert await main.get_by_role("textbox", name="Message").count() == 1
    assert await page.get_by_role("banner").get_by_role("navigation", name="Commands").count() == 1


async def test_a_screen_reader_is_told_once_a_turn_that_the_agent_is_working(served, page) -> None:  # noqa: F811
    adapter, intake, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.evaluate(LISTEN)
    for _ in range(3):  # the gateway repeats "typing" every few seconds all turn long
        await adapter.typing("c1", None)
    await page.wait_for_selector("#working:not([hidden])")
    intake.messages.append(said(2)[1])
    adapter._streams.publish("c1", "message", said(2)[1])  # after the typing events: they have all been taken
    await page.wait_for_selector("[data-id=m2]")
    # Shown only: the dots and "Working…" were seen, and a screen reader heard nothing between its message and the
    # answer, for as long as the turn ran.
    assert (await page.evaluate("window.heard")).count(WORKING) == 1
    assert await page.evaluate("document.activeElement.id") == "input"  # the answer took no focus from the box
    await reconnect_after(page, adapter, intake, [])  # the same turn, still running: not news
    await page.wait_for_selector("#working:not([hidden])")
    assert (await page.evaluate("window.heard")).count(WORKING) == 1
    await adapter.idle("c1", None)
    await page.wait_for_selector("#working", state="hidden")
    await adapter.typing("c1", None)  # the next turn
    await page.wait_for_selector("#working:not([hidden])")
    await page.wait_for_function("(text) => window.heard.filter((t) => t === text).length === 2", arg=WORKING)


async def test_every_control_has_a_name_and_shows_a_focus_ring_and_200_percent_zoom_scrolls_no_sideways(
        served, page) -> None:  # noqa: F811
    adapter, _, base = served
    await page.set_viewport_size({"width": 640, "height": 360})  # a 1280 by 720 window at 200%
    await page.emulate_media(reduced_motion="reduce")
    await open_chat(page, f"{base}/chat?chat=c1")
    await adapter.typing("c1", None)  # the working line's Stop button shows
    await page.wait_for_selector("#working:not([hidden])")
    controls = [n for n in await ax_nodes(page) if n["role"]["value"] in CONTROLS]
    assert controls and [n for n in controls if not n.get("name", {}).get("value", "").strip()] == []
    assert await page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    assert await page.eval_on_selector(".dots i", "e => getComputedStyle(e).animationName") == "none"
    # From the message box, Tab and Shift+Tab reach every button, and the history (a scrolling list: Chromium makes
    # it a stop of its own, its arrow keys scroll it), each with its focus ring showing.
    await page.focus("#input")
    reached = []
    for key in ["Tab"] + ["Shift+Tab"] * 6:
        await page.keyboard.press(key)
        reached.append(await page.evaluate(FOCUSED))
    assert reached == [["send", True], ["input", True], ["stop", True], ["messages", True], ["New session", True],
                       ["Agents", True], ["Stop", True]]
