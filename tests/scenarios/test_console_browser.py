"""The operator console in a real headless chromium, next to the web chat: what an operator sees and does.

A real gateway with the demo model serves both pages; Playwright reads the DOM and clicks.
Every wait is for something on a page, never for time.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import aiohttp
import pytest
import pytest_asyncio

from gateway.console.routes import STOP_REASON
from tests.browser import contrast_failures
from tests.web_client import post_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

TOKEN = "console-token-0123456789abcdef"


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_the_console_shows_the_session_its_children_and_the_delegation_going_from_ran_to_delivered(
        chat, page) -> None:
    web = await chat(model={"demo": {"child_steps": 2, "step_seconds": 0.3}})
    await page.goto(f"{web.base}/console")
    await page.wait_for_selector("body[data-state=connected]")
    assert await page.locator("#work .turn").count() == 0
    async with aiohttp.ClientSession() as http:
        status, _ = await post_message(http, web.base, "c1", "Compare these:\n- apples\n- pears", key="key-console-1")
        assert status == 202
    session = page.locator("#sessions tr", has_text="c1")
    await session.wait_for()
    assert await session.locator("td").nth(2).text_content() == "background"  # the web chat delegates so
    # The turn's children appear live, with a Stop button each, under the turn that launched them.
    await page.wait_for_selector("#work .child[data-state=RUNNING] >> text=apples")
    assert await page.locator("#work .turn .child button", has_text="Stop").count() == 2
    delegation = page.locator("#delegations tr[data-delegation-id]")
    await page.wait_for_selector("#delegations tr[data-status=running]")
    # ...and when they are done the results are delivered: the row changes in place, the tree goes.
    await page.wait_for_selector("#delegations tr[data-status=delivered]")
    assert await delegation.count() == 1
    assert "2 of 2" in await delegation.inner_text()
    await page.wait_for_selector("#work .turn", state="detached")
    await web.settled()
    assert await page.locator("#platforms li[data-platform=web]").count() == 1


async def test_a_session_not_in_memory_reads_idle_now_as_one_in_memory_with_nothing_to_do(chat, page) -> None:
    web = await chat()
    async with aiohttp.ClientSession() as http:
        await post_message(http, web.base, "c1", "hello", key="key-idle-1")
        await web.settled()
        await web.restart()  # c1's session is in the store only, until its chat speaks again
        await post_message(http, web.base, "c2", "hello", key="key-idle-2")
        await web.settled()
    assert web.gateway.sessions.find("web", "c1", None) is None and web.gateway.sessions.find("web", "c2", None)
    await page.goto(f"{web.base}/console")
    for chat_id in ("c1", "c2"):  # the Now column was blank for c1, as if not known
        now = page.locator("#sessions tr", has_text=chat_id).locator("td").last
        await now.wait_for()
        assert await now.text_content() == "idle", chat_id


async def test_stopping_a_child_from_the_console_shows_in_the_chat(chat, page) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, server={"console_token": TOKEN},
                     model={"demo": {"child_steps": 1, "step_seconds": 0.05}})
    console = await page.context.new_page()
    await console.goto(f"{web.base}/console#token={TOKEN}")  # a link with the token opens it at once
    await console.wait_for_selector("body[data-state=connected]")
    assert TOKEN not in console.url
    await page.goto(f"{web.base}/chat?chat=c1")
    await page.wait_for_selector("body[data-state=connected]")
    await page.fill("#input", "Compare these:\n- apples\n- [stall] pears")
    await page.press("#input", "Enter")
    stalled = console.locator("#work .child[data-state=RUNNING]", has_text="pears")
    console.once("dialog", lambda dialog: dialog.accept())
    await stalled.get_by_role("button", name="Stop").click()
    reply = await page.wait_for_selector("[data-kind=reply]")
    text = await reply.get_attribute("data-text")
    assert text is not None and f"[stall] pears: interrupted — {STOP_REASON}" in text
    assert "apples: completed" in text
    await console.wait_for_selector("#work .turn", state="detached")


async def test_stopping_a_turn_from_the_console_tells_the_chat(chat, page) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, model={"demo": {"child_steps": 1, "step_seconds": 0.05}})
    console = await page.context.new_page()
    await console.goto(f"{web.base}/console")
    await console.wait_for_selector("body[data-state=connected]")
    await page.goto(f"{web.base}/chat?chat=c1")
    await page.wait_for_selector("body[data-state=connected]")
    await page.fill("#input", "Compare these:\n- [stall] apples\n- [stall] pears")
    await page.press("#input", "Enter")
    await console.wait_for_selector("#work .child[data-state=RUNNING] >> text=pears")
    posted: list[str] = []
    console.on("request", lambda request: posted.append(request.url) if request.method == "POST" else None)
    stop = console.locator("#work .turn-head").get_by_role("button", name="Stop")
    # Stopping cannot be undone: a slip of the mouse is asked about, and "Cancel" sends nothing.
    asked: list[tuple[str, str]] = []

    async def cancel(dialog) -> None:
        asked.append((dialog.type, dialog.message))
        await dialog.dismiss()

    console.once("dialog", cancel)
    await stop.click()
    assert asked and asked[0][0] == "confirm" and "Stop the turn running in web · c1?" in asked[0][1]
    await console.wait_for_selector("#work .turn-head button:enabled")
    assert posted == []
    console.on("dialog", lambda dialog: dialog.accept())
    await stop.dblclick()  # a double click, each click confirmed, still stops it once
    reply = await page.wait_for_selector("[data-kind=reply]")
    assert await reply.get_attribute("data-text") == "(Stopped from the operator console.)"
    await console.wait_for_selector("#work .turn", state="detached")
    assert [url.rsplit("/", 1)[-1] for url in posted] == ["stop"]


async def test_recent_errors_say_when_with_the_date_and_zone(chat, browser) -> None:
    web = await chat()
    logging.getLogger("gateway.test").warning("the disk is nearly full")
    context = await browser.new_context(timezone_id="Asia/Tokyo", locale="en-GB")
    try:
        page = await context.new_page()
        await page.goto(f"{web.base}/console")
        line = page.locator("#errors li", has_text="the disk is nearly full")  # the line, not its message
        await line.wait_for()
        # A clock time alone reads the same for yesterday's error, and in no zone the logs can be matched to.
        today = datetime.now(ZoneInfo("Asia/Tokyo")).strftime("%d/%m/%Y")
        assert today in await line.inner_text() and "GMT+9" in await line.inner_text()
    finally:
        await context.close()


async def test_a_list_cut_to_its_newest_says_how_many_more_there_are(chat, page) -> None:
    web = await chat()
    now = time.time()
    web.gateway.store.db.write_many(
        "INSERT INTO gateway_dead_letters (platform, event_id, payload, turn_id, attempts, error, received_at, dead_at)"
        " VALUES ('web', ?, ?, NULL, 3, 'database or disk is full', ?, ?)",
        ((f"ev-{i}", json.dumps({"chat_id": f"c{i}", "text": f"message {i}"}), now, now) for i in range(200)))
    await page.goto(f"{web.base}/console")
    await page.wait_for_selector("#dead tr >> text=message 199")
    assert await page.locator("#dead tr").count() == 50
    # Dismissing the fifty shown must not look like the end of them.
    assert await page.locator("#dead-shown").text_content() == "the 50 newest of 200 shown"
    assert await page.locator("#failed-shown").text_content() == ""


async def test_a_link_with_a_wrong_token_says_the_links_token_was_not_accepted(chat, page) -> None:
    web = await chat(server={"console_token": TOKEN})
    await page.goto(f"{web.base}/console#token=an-old-token-since-replaced")
    await page.wait_for_selector("body[data-state=login]")
    # Not the same page as a first visit: the operator learns the link's token is wrong, not only that one is needed.
    error = page.locator("#login-error")
    assert await error.is_visible() and await error.text_content() == ("The token in the link is not accepted; "
                                                                     "it may have been changed.")
    # Named, and the refusal said at the field the focus is in: a screen reader heard "dialog" and "Token" alone.
    assert await page.get_by_role("dialog", name="Sign in").count() == 1
    token = page.get_by_role("textbox", name="Token")
    assert await token.get_attribute("aria-invalid") == "true"
    assert await token.get_attribute("aria-describedby") == "login-error"
    await page.fill("#token", TOKEN)
    await page.press("#token", "Enter")
    await page.wait_for_selector("body[data-state=connected]")


async def test_every_text_reads_against_its_background_in_light_and_in_dark(chat, page) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, model={"demo": {"child_steps": 1, "step_seconds": 0.05}})
    now = time.time()
    web.gateway.store.db.write_many(
        "INSERT INTO gateway_dead_letters (platform, event_id, payload, turn_id, attempts, error, received_at, dead_at)"
        " VALUES ('web', 'ev-1', ?, NULL, 3, 'database or disk is full', ?, ?)",
        [(json.dumps({"chat_id": "c1", "text": "hello"}), now, now)])
    logging.getLogger("gateway.test").warning("the disk is nearly full")
    logging.getLogger("gateway.test").error("the disk is full")
    async with aiohttp.ClientSession() as http:
        await post_message(http, web.base, "c1", "Compare these:\n- [stall] apples\n- pears", key="key-contrast")
    await page.goto(f"{web.base}/console")
    await page.wait_for_selector("#work .child[data-state=RUNNING] >> text=apples")  # running, with Stop buttons
    await page.wait_for_selector("#work .child[data-state=SUCCEEDED]")
    await page.wait_for_selector("#dead tr >> text=hello")
    await page.wait_for_selector("#errors li.ERROR")
    faint = {}
    for scheme in ("light", "dark"):
        await page.emulate_media(color_scheme=scheme)
        faint[scheme] = await contrast_failures(page)
    assert faint == {"light": [], "dark": []}


async def test_on_a_phone_each_row_reads_whole_with_its_buttons_and_nothing_scrolls_sideways(chat, page) -> None:
    web = await chat()
    now = time.time()
    web.gateway.store.db.write_many(
        "INSERT INTO gateway_dead_letters (platform, event_id, payload, turn_id, attempts, error, received_at, dead_at)"
        " VALUES ('web', 'ev-1', ?, NULL, 3, 'database or disk is full', ?, ?)",
        [(json.dumps({"chat_id": "c1", "text": "the quarterly numbers, please"}), now, now)])
    async with aiohttp.ClientSession() as http:
        await post_message(http, web.base, "c1", "hello", key="key-phone-1")
    await web.settled()
    await page.set_viewport_size({"width": 375, "height": 700})
    await page.goto(f"{web.base}/console")
    row = page.locator("#dead tr", has_text="quarterly")  # a locator: each new state draws the rows again
    await row.wait_for()
    await page.wait_for_selector("#sessions tr >> text=c1")
    sideways = "els => els.filter(s => s.scrollWidth > s.clientWidth).map(s => s.id)"
    assert await page.eval_on_selector_all("section", sideways) == []
    # Each cell wide enough for its words (not "datab ase or disk is full"), each named by its column.
    error = row.locator("td.error")
    assert (await error.bounding_box())["width"] > 200
    assert await error.evaluate("e => getComputedStyle(e, '::before').content") == '"Error: "'
    for box in [await button.bounding_box() for button in await row.get_by_role("button").all()]:
        assert box["x"] + box["width"] <= 375


async def test_a_button_stays_disabled_until_the_gateway_answers_though_the_page_redraws_meanwhile(chat, page) -> None:
    # Every state draws the buttons anew: one drawn while its action was on its way was enabled again,
    # and a second click sent it twice.
    web = await chat(delegation={"gateway_mode": "inline"}, model={"demo": {"child_steps": 1, "step_seconds": 0.05}})
    async with aiohttp.ClientSession() as http:
        await post_message(http, web.base, "c1", "Compare these:\n- [stall] apples\n- [stall] pears", key="key-held-1")
    await page.goto(f"{web.base}/console")
    stop = page.locator("#work .child", has_text="pears").get_by_role("button", name="Stop")
    await stop.evaluate("button => { button.dataset.before = 'yes'; }")
    posted, answer = asyncio.Event(), asyncio.Event()

    async def held(route) -> None:  # the gateway is slow to answer, and then it did nothing
        posted.set()
        await answer.wait()
        await route.fulfill(status=503, json={"error": "the state database cannot be written"})

    await page.route("**/console/api/children/*/stop", held)
    page.on("dialog", lambda dialog: dialog.accept())
    await stop.click()
    await posted.wait()
    async with aiohttp.ClientSession() as http:  # something else happens meanwhile: the console redraws
        await post_message(http, web.base, "c2", "hello", key="key-held-2")
    await page.wait_for_function("() => !document.querySelector('[data-before]')")
    assert await stop.is_disabled()  # the one drawn anew
    answer.set()
    await page.wait_for_selector("#notice:not([hidden])")
    assert await stop.is_enabled()  # the gateway did nothing: it may be asked again
    await page.unroute("**/console/api/children/*/stop")
    await stop.click()
    await page.wait_for_selector("#work .child[data-state=INTERRUPTED] >> text=pears")


async def test_a_button_reached_with_the_keyboard_keeps_the_focus_when_the_state_changes(chat, page) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, model={"demo": {"child_steps": 1, "step_seconds": 0.05}})
    async with aiohttp.ClientSession() as http:
        await post_message(http, web.base, "c1", "Compare these:\n- [stall] apples\n- [stall] pears", key="key-focus-1")
    await page.goto(f"{web.base}/console")
    stop = page.locator("#work .child", has_text="pears").get_by_role("button", name="Stop")
    await stop.focus()  # as by Tab: the operator is about to press Enter
    await stop.evaluate("button => { button.dataset.before = 'yes'; }")
    async with aiohttp.ClientSession() as http:  # something else happens meanwhile: the console redraws
        await post_message(http, web.base, "c2", "hello", key="key-focus-2")
    await page.wait_for_function("() => !document.querySelector('[data-before]')")
    focused = "() => [document.activeElement.textContent, document.activeElement.closest('.child')?.textContent]"
    label, child = await page.evaluate(focused)
    assert label == "Stop" and child is not None and "pears" in child  # Enter still stops what was chosen


async def test_a_button_reached_with_the_keyboard_keeps_the_focus_when_its_question_is_cancelled(chat, page) -> None:
    # A button is disabled while it asks and while the gateway answers, and a disabled button loses the
    # focus to the page: after "Cancel", Enter did nothing and Tab started over from the top.
    web = await chat(delegation={"gateway_mode": "inline"}, model={"demo": {"child_steps": 1, "step_seconds": 0.05}})
    async with aiohttp.ClientSession() as http:
        await post_message(http, web.base, "c1", "Compare these:\n- [stall] apples\n- [stall] pears",
                           key="key-cancel-1")
    await page.goto(f"{web.base}/console")
    stop = page.locator("#work .child", has_text="pears").get_by_role("button", name="Stop")
    await stop.focus()  # as by Tab
    asked: list[str] = []

    async def cancel(dialog) -> None:
        asked.append(dialog.message)
        await dialog.dismiss()

    page.once("dialog", cancel)
    await page.keyboard.press("Enter")
    await page.wait_for_function("() => document.activeElement.matches('#work .child button:enabled')")
    assert asked and "pears" in asked[0]
    focused = "() => [document.activeElement.textContent, document.activeElement.closest('.child')?.textContent]"
    label, child = await page.evaluate(focused)
    assert label == "Stop" and child is not None and "pears" in child
    page.once("dialog", lambda dialog: dialog.accept())
    await page.keyboard.press("Enter")  # what was chosen, at once
    await page.wait_for_selector("#work .child[data-state=INTERRUPTED] >> text=pears")
