"""The web chat page on a phone with its keyboard up, and a reader at the bottom as the message box grows, in a real
headless chromium against the adapter alone (tests/platforms/test_web_chat_phone.py has the rest)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.web_client import Intake, chat_alone, open_chat

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

AT_BOTTOM = ("(() => { const l = document.getElementById('messages');"
             " return l.scrollHeight - l.scrollTop - l.clientHeight < 2; })()")
TWO_FRAMES = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"

# A phone's keyboard covers the lower part of the window without making the page shorter (Safari; Chrome on Android
# since 108): the visual viewport shrinks, the layout viewport and its `vh` do not. Headless chromium has no such
# keyboard: the page is given a `visualViewport` that does the same, `__keyboard(px)` showing one px tall.
KEYBOARD = """(() => {
  const seen = new EventTarget();
  let covered = 0;
  Object.defineProperties(seen, { height: { get: () => innerHeight - covered }, width: { get: () => innerWidth },
    scale: { value: 1 }, offsetTop: { get: () => 0 }, offsetLeft: { value: 0 } });
  Object.defineProperty(window, "visualViewport", { value: seen, configurable: true });
  window.__keyboard = (px) => { covered = px; seen.dispatchEvent(new Event("resize")); };
})();"""


@pytest_asyncio.fixture(loop_scope="session")
async def base(tmp_path) -> AsyncIterator[str]:
    intake = Intake()
    intake.messages += [{"id": f"m{n}", "role": "assistant", "kind": "reply", "text": f"answer {n}\n" * 5,
                         "time": float(n), "edited": False} for n in range(20)]
    async with chat_alone(intake, tmp_path / "files") as (_, url):
        yield url


async def on_phone(browser, width: int, height: int):
    context = await browser.new_context(viewport={"width": width, "height": height}, is_mobile=True, has_touch=True)
    context.set_default_timeout(15_000)
    await context.add_init_script(KEYBOARD)
    return context, await context.new_page()


async def test_with_the_keyboard_up_a_long_message_leaves_most_of_what_shows_to_the_messages(base, browser) -> None:
    # An iPhone SE: 320x568, its keyboard, suggestions and Safari's bar 320 px. The box's 40% of the window was 227 px
    # of the 248 that show above them, the messages and the header behind the rest: a long message was typed with the
    # conversation out of sight.
    context, page = await on_phone(browser, 320, 568)
    try:
        await open_chat(page, f"{base}/chat?chat=c1")
        await page.tap("#input")
        await page.evaluate("__keyboard(320)")
        await page.evaluate(TWO_FRAMES)
        assert await page.eval_on_selector("#input", "el => el.scrollHeight - el.clientHeight") <= 0  # the whole hint
        await page.fill("#input", "\n".join(f"- item {n}" for n in range(60)))  # a long paste
        shown = await page.evaluate("visualViewport.height")
        assert await page.eval_on_selector("#input", "el => el.offsetHeight") <= 0.4 * shown + 1
        assert await page.eval_on_selector("#send", "el => el.getBoundingClientRect().bottom") <= 568
        await page.evaluate("__keyboard(0)")  # the keyboard down, the box has its 40% of the window again
        await page.wait_for_function("document.getElementById('input').offsetHeight > 0.39 * innerHeight")
    finally:
        await context.close()


async def test_a_line_typed_before_the_page_s_scroll_to_the_bottom_is_seen_keeps_the_reader_there(base, browser):
    # The page's scroll to the bottom is told at the next frame; a key typed in between (fast typing, a key held down)
    # makes the box taller and the list shorter first. Taken for the reader's scroll, away from the bottom, it let go
    # of the bottom (the `placed` guard in chat.js). Each line here is typed right after the page placed the list.
    context, page = await on_phone(browser, 375, 640)
    try:
        await open_chat(page, f"{base}/chat?chat=c1")
        await page.wait_for_function(f"document.getElementById('messages').scrollHeight > 700 && {AT_BOTTOM}")
        await page.tap("#input")
        await page.evaluate("""() => new Promise((done) => {
          const list = document.getElementById("messages"), input = document.getElementById("input");
          let lines = 0;
          const type = () => { input.value += "\\n- item " + lines; input.dispatchEvent(new Event("input")); };
          const channel = new MessageChannel(); // a task, before the next frame
          channel.port1.onmessage = () => { if (++lines < 6) type(); else { seen.disconnect(); done(); } };
          const seen = new ResizeObserver(() => channel.port2.postMessage(0)); // after the page's own observer
          seen.observe(list);
          type();
        })""")
        await page.evaluate(TWO_FRAMES)
        assert await page.evaluate(AT_BOTTOM)
    finally:
        await context.close()
