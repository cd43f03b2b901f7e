"""The web chat page on a phone (a touch screen 320 to 375 px wide, no keyboard, no mouse), in a real headless
chromium against the adapter alone: what can be typed there, and what the message box shows."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from platforms.web import WebChatAdapter
from tests.web_client import Intake, chat_alone, open_chat

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

SHOWN = "els => els.map(e => e.dataset.text)"
AT_BOTTOM = "l.scrollHeight - l.scrollTop - l.clientHeight < 2"  # the message list `l` scrolled to its end


def phone(width: int) -> dict[str, object]:
    return {"viewport": {"width": width, "height": 640}, "is_mobile": True, "has_touch": True}


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[WebChatAdapter, Intake, str]]:
    intake = Intake()
    async with chat_alone(intake, tmp_path / "files") as (adapter, base):
        yield adapter, intake, base


@pytest_asyncio.fixture(loop_scope="session")
async def on_phone(browser) -> AsyncIterator[object]:
    context = await browser.new_context(**phone(375))
    context.set_default_timeout(15_000)
    yield await context.new_page()
    await context.close()


async def test_on_a_touch_screen_enter_starts_a_new_line_so_a_list_can_be_typed(served, on_phone) -> None:
    # A phone's keyboard has no Shift+Enter: Enter sending, the list a delegation takes could not be typed at all.
    _, intake, base = served
    page = on_phone
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.tap("#input")
    for line in ("Compare these:", "- apples"):
        await page.keyboard.type(line)
        await page.keyboard.press("Enter")
    await page.keyboard.type("- pears")
    assert await page.input_value("#input") == "Compare these:\n- apples\n- pears"
    assert await page.eval_on_selector_all("#messages > article", SHOWN) == []  # nothing went
    await page.tap("#send")
    await page.wait_for_selector("[data-role=user]:not(.pending)")
    assert intake.texts == ["Compare these:\n- apples\n- pears"]
    assert await page.input_value("#input") == ""


async def test_a_keyboard_s_ctrl_enter_sends_on_a_touch_screen_too(served, on_phone) -> None:
    _, intake, base = served
    await open_chat(on_phone, f"{base}/chat?chat=c1")
    await on_phone.fill("#input", "from a tablet's keyboard")
    await on_phone.press("#input", "Control+Enter")
    await on_phone.wait_for_selector("[data-role=user]:not(.pending)")
    assert intake.texts == ["from a tablet's keyboard"]


async def test_with_a_mouse_enter_still_sends_and_shift_enter_starts_a_new_line(served, page) -> None:
    _, intake, base = served
    await page.set_viewport_size({"width": 375, "height": 640})  # narrow, but a mouse: a desktop window
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.fill("#input", "two")
    await page.press("#input", "Shift+Enter")
    await page.keyboard.type("lines")
    await page.press("#input", "Enter")
    await page.wait_for_selector("[data-role=user]:not(.pending)")
    assert intake.texts == ["two\nlines"]


# The box's hint (what a list does, where the commands are) is its only mention on the page: cut off, a phone's user
# never read it. An empty box's scrollHeight is its placeholder's.
CUT_OFF = "el => el.scrollHeight - el.clientHeight"


@pytest.mark.parametrize("width", [320, 375])
async def test_on_a_phone_the_empty_box_shows_its_whole_hint(served, browser, width) -> None:
    _, _, base = served
    context = await browser.new_context(**phone(width))
    try:
        page = await context.new_page()
        await open_chat(page, f"{base}/chat?chat=c1")
        assert await page.eval_on_selector("#input", CUT_OFF) <= 0
        assert await page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    finally:
        await context.close()


async def test_after_sending_a_long_message_the_empty_box_shows_its_whole_hint_again(served, on_phone) -> None:
    _, _, base = served
    page = on_phone
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.fill("#input", "\n".join(f"line {n}" for n in range(30)))  # the box scrolled to its end
    await page.tap("#send")
    await page.wait_for_selector("[data-role=user]:not(.pending)")
    assert await page.eval_on_selector("#input", "el => [el.value, el.scrollTop]") == ["", 0]
    assert await page.eval_on_selector("#input", CUT_OFF) <= 0


async def test_the_box_growing_with_a_list_being_typed_keeps_a_reader_at_the_bottom_there(served, on_phone) -> None:
    _, intake, base = served
    intake.messages += [{"id": f"m{n}", "role": "assistant", "kind": "reply", "text": f"answer {n}\n" * 5,
                         "time": float(n), "edited": False} for n in range(20)]
    page = on_phone
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.wait_for_function(f"() => {{ const l = document.getElementById('messages');"
                                 f" return l.scrollHeight > l.clientHeight && {AT_BOTTOM}; }}")
    before = await page.eval_on_selector("#input", "el => el.offsetHeight")
    await page.tap("#input")
    for n in range(8):
        await page.keyboard.type(f"- item {n}")
        await page.keyboard.press("Enter")
    assert await page.eval_on_selector("#input", "el => el.offsetHeight") > before  # it grew: the list got shorter
    # At the next frame (a resize is observed once laid out), the list is at its bottom still.
    await page.wait_for_function(f"() => {{ const l = document.getElementById('messages'); return {AT_BOTTOM}; }}",
                                 timeout=5_000)


# Safari on an iPhone zooms the page in when a text field under 16 px takes the focus, and leaves it zoomed: the chat
# then scrolled sideways, the Send button off the screen. Chromium does not zoom, so what is checked is that size.
FONT_PX = "els => els.map(el => parseFloat(getComputedStyle(el).fontSize))"


async def test_on_a_touch_screen_the_text_fields_are_16_px_so_focusing_one_does_not_zoom(served, on_phone) -> None:
    _, _, base = served
    await open_chat(on_phone, f"{base}/chat?chat=c1")
    assert all(size >= 16 for size in await on_phone.eval_on_selector_all("#input, #token", FONT_PX))
