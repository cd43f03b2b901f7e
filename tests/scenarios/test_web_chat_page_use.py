"""The web chat page in a real headless chromium, as a person uses it: the view follows what
grows at the bottom while they read there, Enter that ends an input method's composition does
not send, a download cut off midway says so, and dismissing a refused message leaves the keyboard
in the message box. Every wait is for something on the page, never for time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from platforms.messages import Outbound, OutboundFile
from tests.web_client import open_chat, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

AT_BOTTOM = "el => el.scrollHeight - el.scrollTop - el.clientHeight < 2"


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_a_progress_card_growing_at_the_bottom_keeps_the_reader_at_the_bottom(chat, page) -> None:
    web = await chat()
    await page.set_viewport_size({"width": 375, "height": 500})
    await open_chat(page, f"{web.base}/chat?chat=c1")
    adapter = web.gateway.adapters["web"]
    for i in range(8):
        await adapter.send(Outbound("c1", None, f"reply {i}\n\nwith a second paragraph", idempotency_key=f"r{i}"))
    await adapter.send(Outbound("c1", None, "⏳ Thinking", kind="notice", idempotency_key="card"))
    await page.wait_for_selector("[data-id=card]")
    assert await page.eval_on_selector("#messages", AT_BOTTOM)
    await adapter.typing("c1", None)  # the working line takes room from the messages
    await page.wait_for_selector("#working", state="visible")
    assert await page.eval_on_selector("#messages", AT_BOTTOM)
    lines = ["⏳ Running tools"] + [f"▸ step {i}" for i in range(12)]
    await adapter.edit("c1", None, "card", "\n".join(lines))
    await page.wait_for_function("() => document.querySelector('[data-id=card]').dataset.text.includes('step 11')")
    assert await page.eval_on_selector("#messages", AT_BOTTOM)  # the card's new lines show
    await adapter.send(Outbound("c1", None, "the answer", idempotency_key="answer"))
    await page.wait_for_selector("[data-id=answer]")
    assert await page.eval_on_selector("#messages", AT_BOTTOM)  # and so does the reply after it


async def test_enter_that_ends_an_input_methods_composition_does_not_send(chat, page) -> None:
    web = await chat()
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await page.focus("#input")
    cdp = await page.context.new_cdp_session(page)
    # Japanese typed with an input method: the Enter that picks the conversion is the method's, not the page's.
    # Chromium marks that keydown isComposing; Safari ends the composition first and marks it with key code 229.
    await cdp.send("Input.imeSetComposition", {"text": "にほんご", "selectionStart": 4, "selectionEnd": 4})
    await cdp.send("Input.insertText", {"text": "日本語"})
    await cdp.send("Input.dispatchKeyEvent", {"type": "rawKeyDown", "key": "Enter", "code": "Enter",
                                               "windowsVirtualKeyCode": 229})
    await cdp.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": "Enter", "code": "Enter",
                                               "windowsVirtualKeyCode": 229})
    assert await page.input_value("#input") == "日本語"
    assert await page.query_selector("[data-kind=user]") is None
    await page.press("#input", "Enter")  # the next Enter sends it
    await page.wait_for_selector("[data-kind=user] >> text=日本語")
    assert await page.input_value("#input") == ""


async def test_a_download_cut_off_midway_says_it_was_not_downloaded(chat, page, tmp_path) -> None:
    web = await chat()
    await open_chat(page, f"{web.base}/chat?chat=c1")
    (tmp_path / "report.csv").write_bytes(b"x" * 5000)
    file = OutboundFile(str(tmp_path / "report.csv"), "report.csv", 5000)
    await web.gateway.adapters["web"].send_file(Outbound("c1", None, "the report", idempotency_key="f1"), file)
    link = await page.wait_for_selector(".has-file .file a")

    async def cut_off(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")  # as when the gateway stops halfway through sending it
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/csv\r\nContent-Length: 5000\r\n\r\n" + b"x" * 100)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(cut_off, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    await page.route("**/chat/api/files/**", lambda route: route.continue_(url=f"http://127.0.0.1:{port}/f"))
    try:
        await link.click()
        problem = await page.wait_for_selector(".has-file .file .problem")
        assert await problem.text_content() == "Not downloaded: the download was cut off; try again"
    finally:
        server.close()
        await server.wait_closed()


async def test_dismissing_a_refused_message_with_the_keyboard_leaves_the_cursor_in_the_box(chat, page) -> None:
    web = await chat()
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await page.fill("#input", "x" * 32_001)
    await page.press("#input", "Enter")
    refused = page.locator("[data-kind=user].failed")
    await refused.wait_for()  # its text is back in the box: dismissed without a question
    await refused.get_by_role("button", name="Dismiss").focus()
    await page.keyboard.press("Enter")
    await refused.wait_for(state="detached")
    assert await page.evaluate("document.activeElement.id") == "input"
