"""The web chat page on a touch phone, in a real headless chromium against the adapter alone: a message not sent yet
says so on screen, Chrome on Android's keyboard makes the page shorter instead of covering it, and the buttons are
big enough for a finger (tests/platforms/test_web_chat_phone.py has what is typed there)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from platforms.web import WebChatAdapter
from tests.web_client import Intake, chat_alone, open_chat, replies

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

PHONE = {"viewport": {"width": 375, "height": 640}, "is_mobile": True, "has_touch": True}
HELD = "Not sent yet: it goes by itself once the gateway takes it"
AT_BOTTOM = ("(() => { const l = document.getElementById('messages');"
             " return l.scrollHeight - l.scrollTop - l.clientHeight < 2; })()")
# Where each element shows, in CSS px, and whether it shows at all.
BOXES = """els => els.map(el => { const r = el.getBoundingClientRect();
  return { text: el.textContent.trim(), width: r.width, height: r.height, left: r.left, right: r.right,
           top: r.top, bottom: r.bottom, shown: el.checkVisibility() }; })"""
# What the bubble's ::after line says on screen ("none" when there is none), its quotes and alt text taken off.
LINE = """els => els.map(el => { const c = getComputedStyle(el, "::after").content;
  return c === "none" ? c : JSON.parse(c.split(" / ")[0]); })"""


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[WebChatAdapter, Intake, str]]:
    intake = Intake()
    intake.messages += replies(f"answer {n}\n" * 4 for n in range(12))
    async with chat_alone(intake, tmp_path / "files") as (adapter, base):
        yield adapter, intake, base


@pytest_asyncio.fixture(loop_scope="session")
async def on_phone(browser) -> AsyncIterator[Any]:
    context = await browser.new_context(**PHONE)
    context.set_default_timeout(15_000)
    yield await context.new_page()
    await context.close()


async def test_a_message_held_back_says_not_sent_yet_on_screen_and_once_to_a_screen_reader(served, on_phone) -> None:
    # Its dashed outline alone said it on screen, and the words were a screen reader's only: a phone's user saw a pale
    # bubble and could not tell it waited (nor that it would go by itself), and sent it again.
    _, intake, base = served
    page = on_phone
    away = True

    async def restarting(route: Any) -> None:
        if away:
            await route.fulfill(status=503)
        else:
            await route.continue_()

    await page.route("**/chat/api/messages", restarting)
    await open_chat(page, f"{base}/chat?chat=c1")
    for text in ("hello", "and then"):  # the second queued behind the first
        await page.fill("#input", text)
        await page.tap("#send")  # Enter starts a new line on a touch screen
    held = page.locator("[data-role=user].pending:has(> .waiting)")
    await held.nth(1).wait_for(timeout=5_000)
    # The line is drawn by chat.css, under the text, inside the bubble: what shows of it is what it says and how
    # much taller it makes the bubble than when the same message has gone.
    assert await held.evaluate_all(LINE) == [HELD, HELD]
    tall = await held.evaluate_all(BOXES)
    assert all(box["right"] <= 375 for box in tall), tall
    # What a screen reader hears of each is as it was: its words once, not the line besides.
    snapshot = (await page.locator("#messages").aria_snapshot()).splitlines()
    assert snapshot[-2:] == ['  - article: "You: hello (not sent yet)"', '  - article: "You: and then (not sent yet)"']

    away = False
    await page.wait_for_selector("[data-role=user].pending", state="detached")
    assert intake.texts[-2:] == ["hello", "and then"]
    sent = await page.locator("[data-role=user]").evaluate_all(BOXES)
    assert [box["text"] for box in sent[-2:]] == ["You: hello", "You: and then"]
    for before, after in zip(tall, sent[-2:], strict=True):
        assert before["height"] >= after["height"] + 15, (before, after)  # a line of its own, in sight
    assert await page.locator("[data-role=user]").evaluate_all(LINE) == ["none"] * len(sent)


async def test_a_message_typed_offline_says_not_sent_yet_on_screen_until_the_network_is_back(served, browser) -> None:
    _, intake, base = served
    context = await browser.new_context(**PHONE)
    context.set_default_timeout(15_000)
    try:
        page = await context.new_page()
        await open_chat(page, f"{base}/chat?chat=c1")
        await context.set_offline(True)  # out of signal
        await page.wait_for_selector("body[data-state=offline]", timeout=10_000)
        await page.fill("#input", "typed in a tunnel")
        await page.tap("#send")
        held = page.locator("[data-role=user].pending:has(> .waiting)")
        await held.wait_for(timeout=5_000)
        assert await held.evaluate_all(LINE) == [HELD]
        await context.set_offline(False)
        await page.wait_for_selector("[data-role=user].pending", state="detached", timeout=10_000)
        assert intake.texts[-1] == "typed in a tunnel"
        assert await page.locator("[data-role=user]").last.evaluate_all(LINE) == ["none"]
    finally:
        await context.close()


async def test_chrome_on_android_makes_the_page_shorter_for_its_keyboard_instead_of_covering_it(served, on_phone):
    # Since Chrome 108 its keyboard covers the lower part of a page that does not ask otherwise: the newest messages
    # and the box being typed in went under it. Headless chromium has no on-screen keyboard; that it takes the key
    # is what it can tell (a misspelt one, or a value it does not know, is a console warning, and ignored).
    _, _, base = served
    page = on_phone
    warnings: list[str] = []
    page.on("console", lambda message: warnings.append(message.text))
    await open_chat(page, f"{base}/chat?chat=c1")
    content = await page.get_attribute("meta[name=viewport]", "content")
    settings = dict(part.strip().split("=", 1) for part in content.split(","))
    assert settings["interactive-widget"] == "resizes-content", content
    assert not [line for line in warnings if "viewport" in line or "interactive-widget" in line], warnings

    # The keyboard up (the window 300 px shorter, as resizes-content makes it): the list stays at its newest message,
    # Send in sight, and a long message takes no more than 40% of what shows (chat.js's `--shown`, and `vh`, agree).
    await page.wait_for_function(AT_BOTTOM)
    await page.tap("#input")
    await page.set_viewport_size({"width": 375, "height": 340})
    await page.wait_for_function("visualViewport.height === 340 && innerHeight === 340")
    await page.fill("#input", "\n".join(f"- item {n}" for n in range(40)))
    await page.wait_for_function(AT_BOTTOM, timeout=5_000)
    assert await page.eval_on_selector("#input", "el => el.offsetHeight") <= 0.4 * 340 + 1
    assert await page.eval_on_selector("#send", "el => el.getBoundingClientRect().bottom") <= 340
    assert await page.eval_on_selector("#messages", "el => el.clientHeight") >= 60
    await page.set_viewport_size(PHONE["viewport"])  # the keyboard down


# Whether each point of a 44 px box around each button's centre is the button's to a tap, by button.
TAPPABLE = """els => els.map(el => { const r = el.getBoundingClientRect();
  const [x, y] = [r.left + r.width / 2, r.top + r.height / 2];
  const missed = [];
  for (const dx of [-21.5, 0, 21.5]) for (const dy of [-21.5, 0, 21.5]) {
    const hit = document.elementFromPoint(x + dx, y + dy);
    if (!hit || hit.closest("button") !== el) missed.push([dx, dy, hit && hit.tagName]);
  }
  return [el.textContent.trim(), missed]; })"""


async def test_on_a_touch_screen_each_button_takes_the_taps_of_44_px_each_way(served, browser) -> None:
    # The header's commands were 33 px tall side by side: a finger meant for Agents could land on Stop or New session.
    _, _, base = served
    for width in (320, 375):
        context = await browser.new_context(**{**PHONE, "viewport": {"width": width, "height": 640}})
        try:
            page = await context.new_page()
            await open_chat(page, f"{base}/chat?chat=c1")
            tappable = await page.locator("header button, #send").evaluate_all(TAPPABLE)
            assert tappable == [[name, []] for name in ("Stop", "Agents", "New session", "Send")], width
            assert await page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        finally:
            await context.close()


async def test_with_a_mouse_the_buttons_keep_their_size(served, page) -> None:
    # A desktop's header stays one slim line: the fingertip's size is for a touch screen only.
    _, _, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    boxes = await page.locator("header button, #send").evaluate_all(BOXES)
    assert all(box["height"] < 40 for box in boxes), boxes
    assert await page.eval_on_selector("header", "el => el.offsetHeight") < 60
