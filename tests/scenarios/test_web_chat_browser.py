"""The web chat page in a real headless chromium: what a person does and sees.

A real gateway with the demo model serves the page; Playwright types, clicks and reads
the DOM. Every wait is for something on the page, never for time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from platforms.formatting import markdown
from tests.browser import contrast_failures
from tests.web_client import open_chat, post_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

LIST = "Compare these:\n- apples\n- pears"
TOKEN = "page-token-0123456789abcdef"
REFUSED = 'Not sent: "text" must be at most 32000 characters'
class _Demo(str):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.startswith("[demo]")

    __hash__ = str.__hash__


ANY_DEMO = _Demo("[demo] …")
SHOWN = "els => els.map(e => [e.dataset.id, e.dataset.kind, e.dataset.text])"


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def shown(page) -> list[list[str]]:
    return await page.eval_on_selector_all("#messages > article", SHOWN)


async def test_a_list_gets_its_acknowledgement_and_its_results_and_a_reload_shows_them_once(chat, page) -> None:
    web = await chat(model={"demo": {"child_steps": 2, "step_seconds": 0.05}})
    keys: list[str] = []

    async def connection_lost_after_the_gateway_took_it(route) -> None:
        keys.append(route.request.post_data_json["key"])
        if len(keys) == 1:  # the gateway has the message, the page never hears so: it must retry, same key
            await route.fetch()
            await route.abort("connectionreset")
        else:
            await route.continue_()

    await page.route("**/chat/api/messages", connection_lost_after_the_gateway_took_it)
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await page.fill("#input", LIST)
    await page.press("#input", "Enter")
    await page.wait_for_selector("[data-kind=completion]")
    await page.wait_for_selector("[data-role=user]:not(.pending)")  # confirmed by the retry
    assert len(keys) >= 2 and len(set(keys)) == 1
    before = await shown(page)
    assert [kind for _, kind, _ in before] == ["user", "reply", "completion"]  # one turn: no second reply
    assert "apples" in before[2][2] and "pears" in before[2][2]
    await page.reload()
    await page.wait_for_selector("body[data-state=connected]")
    assert await shown(page) == before


async def test_a_notice_updates_in_place_and_stop_ends_the_turn_and_removes_it(chat, page) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, agent={"gateway_notify_interval": 0.1},
                     model={"demo": {"child_steps": 30, "step_seconds": 1}}, display={"progress_final": "delete"})
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await page.fill("#input", LIST)
    await page.click("#send")
    notice = await page.wait_for_selector("[data-kind=notice]")
    first = await notice.get_attribute("data-text")
    assert first is not None and first.startswith("⏳")
    await page.wait_for_function("([el, first]) => el.dataset.text !== first", arg=[notice, first])
    assert len(await page.query_selector_all("[data-kind=notice]")) == 1  # edited in place, not sent again
    await page.click("#stop")  # shown while the turn runs
    await page.wait_for_selector("[data-kind=command] >> text=Stopped")
    await page.wait_for_selector("[data-kind=notice]", state="detached")  # deleted: gone from the page
    await page.wait_for_selector("#working", state="hidden")
    # What the person sent, and the answer to /stop: a stopped turn says no more.
    assert [(kind, text) for _, kind, text in await shown(page)][:2] == [("user", LIST), ("user", "/stop")]
    assert [kind for _, kind, _ in await shown(page)] == ["user", "user", "command"]


async def test_what_was_sent_while_the_page_was_disconnected_shows_after_it_reconnects(chat, page) -> None:
    web = await chat()
    await open_chat(page, f"{web.base}/chat?chat=c1")
    reconnect = asyncio.Event()

    async def held_until_released(route) -> None:
        await reconnect.wait()
        await route.continue_()

    await page.route("**/chat/api/events?*", held_until_released)
    assert web.gateway is not None
    await web.gateway.adapters["web"].close_streams()  # as when a proxy or the network drops it
    await page.wait_for_selector("body[data-state=reconnecting]")
    async with aiohttp.ClientSession() as http:  # another tab speaks meanwhile
        await post_message(http, web.base, "c1", "hello from elsewhere", key="key-other-tab")
    await web.settled()
    reconnect.set()
    await page.wait_for_selector("body[data-state=connected]")
    assert [(kind, text) for _, kind, text in await shown(page)] == [
        ("user", "hello from elsewhere"), ("reply", ANY_DEMO)]


async def test_off_loopback_the_page_asks_for_the_token_and_the_api_refuses_without_it(chat, page) -> None:
    web = await chat(server={"host": "0.0.0.0", "port": 0, "console": False},
                     platforms={"web": {"enabled": True, "token": TOKEN}})
    async with aiohttp.ClientSession() as http, http.get(f"{web.base}/chat/api/history?chat=c1") as response:
        assert response.status == 401
    await page.goto(f"{web.base}/chat?chat=c1")
    await page.wait_for_selector("body[data-state=login]")
    await page.fill("#token", "not-the-token")
    await page.click("#login-form button[type=submit]")
    await page.wait_for_selector("#login-error", state="visible")
    await page.fill("#token", TOKEN)
    await page.click("#login-form button[type=submit]")
    await page.wait_for_selector("body[data-state=connected]")
    await page.fill("#input", "hello")
    await page.press("#input", "Enter")
    await page.wait_for_selector("[data-kind=reply]")
    # A link with the token in its fragment opens the chat at once, and the token leaves the address bar.
    other = await page.context.new_page()
    await open_chat(other, f"{web.base}/chat?chat=c1#token={TOKEN}")
    assert TOKEN not in other.url
    assert [kind for _, kind, _ in await shown(other)] == ["user", "reply"]


async def test_a_token_no_header_can_carry_is_asked_for_again(chat, page) -> None:
    web = await chat(server={"host": "0.0.0.0", "port": 0, "console": False},
                     platforms={"web": {"enabled": True, "token": TOKEN}})
    await page.goto(f"{web.base}/chat?chat=c1")
    await page.wait_for_selector("body[data-state=login]")
    await page.fill("#token", TOKEN + "\u200b")  # pasted with a zero-width space: fetch cannot send it as a header
    await page.click("#login-form button[type=submit]")
    await page.wait_for_selector("#login-error", state="visible")
    await page.fill("#token", TOKEN)
    await page.click("#login-form button[type=submit]")
    await page.wait_for_selector("body[data-state=connected]")


async def shown_as_sent(chat, page, text: str):
    """The text of the user's message ``text`` as a fresh chat's page shows it once sent."""
    web = await chat()
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await page.fill("#input", text)
    await page.click("#send")
    return await page.wait_for_selector("[data-kind=user] .text")


async def test_only_a_fence_at_the_start_of_a_line_opens_a_code_block(chat, page) -> None:
    text = "Type ``` and a language to start a block:\n```python\nprint('hi')\n```\nand ``` again to end it."
    mine = await shown_as_sent(chat, page, text)
    blocks = await mine.eval_on_selector_all("pre", "els => els.map(e => e.textContent)")
    assert blocks == ["print('hi')"]
    assert await mine.text_content() == ("Type ``` and a language to start a block:\nprint('hi')"
                                         "and ``` again to end it.")


async def test_a_longer_fence_holds_the_fences_of_the_markdown_it_shows_and_tildes_fence_too(chat, page) -> None:
    # Every ``` line opened or closed a block: the quoted Markdown's own fences cut it into pieces, and
    # the four-backtick lines showed as text around them.
    text = "A README:\n````markdown\n# Title\n```python\nprint(1)\n```\n````\nand a diff:\n~~~\n**kept**\n~~~"
    mine = await shown_as_sent(chat, page, text)
    blocks = await mine.eval_on_selector_all("pre", "els => els.map(e => e.textContent)")
    assert blocks == ["# Title\n```python\nprint(1)\n```", "**kept**"]
    assert await mine.text_content() == "A README:\n# Title\n```python\nprint(1)\n```and a diff:\n**kept**"


async def test_a_bare_url_is_linked_as_written_brackets_and_underscores_included(chat, page) -> None:
    text = "see https://en.wikipedia.org/wiki/Python_(language), or (https://example.com/_a_/b), _https://x.org/c_ https://x.org/d…"
    mine = await shown_as_sent(chat, page, text)
    links = await mine.eval_on_selector_all("a", "els => els.map(e => [e.getAttribute('href'), e.textContent])")
    assert links == [["https://en.wikipedia.org/wiki/Python_(language)"] * 2, ["https://example.com/_a_/b"] * 2,
                     ["https://x.org/c"] * 2, ["https://x.org/d"] * 2]  # nor a trailing _ or …, as in the gateway
    # The _ around an address are italics around it, as the gateway reads them.
    assert await mine.eval_on_selector_all("em", "els => els.map(e => e.textContent)") == ["https://x.org/c"]
    assert await mine.text_content() == text.replace("_https://x.org/c_", "https://x.org/c")


async def test_a_markdown_link_shows_its_text_linked_and_only_a_web_or_mail_address_is_linked(chat, page) -> None:
    text = ("Read [the docs](https://example.com/x), [Foo [bar] `baz`](https://en.wikipedia.org/wiki/Foo_(bar)) "
            "or **[mail us](mailto:help@example.com)**; not [this](javascript:alert(1)), "
            "`[code](https://example.com/c)` nor [`a](https://example.com/d)`.")
    mine = await shown_as_sent(chat, page, text)
    links = await mine.eval_on_selector_all(
        "a", "els => els.map(e => [e.getAttribute('href'), e.textContent, e.rel, e.target])")
    blank = ["noopener noreferrer", "_blank"]
    assert links == [["https://example.com/x", "the docs", *blank],
                     ["https://en.wikipedia.org/wiki/Foo_(bar)", "Foo [bar] baz", *blank],
                     ["mailto:help@example.com", "mail us", *blank]]
    assert await mine.eval_on_selector_all("code", "els => els.map(e => e.textContent)") == [
        "baz", "[code](https://example.com/c)", "a](https://example.com/d)"]
    assert await mine.text_content() == (
        "Read the docs, Foo [bar] baz or mail us; not [this](javascript:alert(1)), "
        "[code](https://example.com/c) nor [a](https://example.com/d).")


async def test_a_code_block_in_a_list_item_nested_ones_too_is_a_block_as_the_gateway_reads_it(chat, page) -> None:
    # Four spaces in or more (a nested item's) a fence was text, its code shown as typed; in an item, the
    # code kept the item's indentation; and a block an item's end closes ran to the end of the message.
    text = ("Steps:\n1. Install:\n   ```bash\n   pip install x\n   ```\n2. Nested:\n    - on Linux:\n\n"
            "        ```\n        apt install x\n          indented\n        ```\n    - done\n"
            "3. End:\n   ~~~\n   left open\nNot the item's.")
    mine = await shown_as_sent(chat, page, text)
    blocks = await mine.eval_on_selector_all("pre", "els => els.map(e => e.textContent)")
    assert blocks == ["pip install x", "apt install x\n  indented", "left open"]
    assert blocks == [t.content.removesuffix("\n") for t in markdown.parse(text) if t.type == "fence"]
    assert await mine.text_content() == ("Steps:\nInstall:\npip install xNested:\non Linux:\n\n"
                                         "apt install x\n  indenteddoneEnd:\nleft openNot the item's.")
    assert await mine.eval_on_selector_all("li > pre", "els => els.length") == 3  # each in its item


async def test_a_reference_link_is_a_link_when_its_label_is_defined_with_a_web_or_mail_address(chat, page) -> None:
    text = ("Read [the docs][d1], [Docs][] or [d2]; not [this][bad], [that][none] nor `[d1]`.\n\n"
            "```\n[x]: https://example.com/in-code\n```\nnor [x].\n\n"
            "[d1]: https://example.com/docs\n[DOCS]:  <https://en.wikipedia.org/wiki/Foo_(bar)>\n"
            "[d2]: mailto:help@example.com \"Help\"\n[d1]: https://example.com/second\n[bad]: javascript:alert(1)")
    mine = await shown_as_sent(chat, page, text)
    links = await mine.eval_on_selector_all(
        "a", "els => els.map(e => [e.getAttribute('href'), e.textContent, e.rel, e.target])")
    blank = ["noopener noreferrer", "_blank"]
    assert links == [["https://example.com/docs", "the docs", *blank],
                     ["https://en.wikipedia.org/wiki/Foo_(bar)", "Docs", *blank],
                     ["mailto:help@example.com", "d2", *blank]]
    assert await mine.eval_on_selector_all("pre", "els => els.map(e => e.textContent)") == [
        "[x]: https://example.com/in-code"]
    # The definitions show as nothing, a javascript: one as typed, as the links using it.
    assert await mine.text_content() == (
        "Read the docs, Docs or d2; not [this][bad], [that][none] nor [d1].\n\n"
        "[x]: https://example.com/in-codenor [x].\n\n[bad]: javascript:alert(1)")


async def test_after_sending_with_the_button_the_cursor_is_back_in_the_box(chat, page) -> None:
    web = await chat()
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await page.fill("#input", "hello")
    await page.click("#send")
    await page.wait_for_selector("[data-kind=user]")
    assert await page.evaluate("document.activeElement.id") == "input"  # the next message can be typed at once


async def test_right_to_left_text_reads_right_to_left_in_the_box_and_in_the_chat(chat, page) -> None:
    web = await chat()
    await open_chat(page, f"{web.base}/chat?chat=c1")
    direction = "el => getComputedStyle(el).direction"
    await page.fill("#input", "שלום עולם!")  # the "!" belongs at the left end
    assert await page.eval_on_selector("#input", direction) == "rtl"
    await page.press("#input", "Enter")
    # Read from the page as it is when each message shows: the sent message's element is replaced once
    # the gateway takes it, and one read just then is detached (no computed style at all).
    shown = "([kind, dir]) => [...document.querySelectorAll(`[data-kind=${kind}] .text`)].some(" \
            "el => el.isConnected && getComputedStyle(el).direction === dir)"
    await page.wait_for_function(shown, arg=["user", "rtl"])
    await page.wait_for_function(shown, arg=["reply", "ltr"])


async def test_on_a_phone_every_button_is_on_screen_and_nothing_scrolls_sideways(chat, page) -> None:
    web = await chat()
    await page.set_viewport_size({"width": 320, "height": 640})
    await open_chat(page, f"{web.base}/chat?chat=c1")
    assert await page.evaluate("document.documentElement.scrollWidth") <= 320
    right_edges = await page.eval_on_selector_all("header button, #send", "els => els.map(e => e.getBoundingClientRect().right)")
    assert len(right_edges) == 4 and max(right_edges) <= 320


async def test_a_message_over_the_limit_is_refused_in_words_and_stays_in_the_box(chat, page) -> None:
    web = await chat()
    await open_chat(page, f"{web.base}/chat?chat=c1")
    text = "x" * 32_001
    await page.fill("#input", text)
    await page.press("#input", "Enter")
    refused = await page.wait_for_selector("[data-kind=user].failed")
    assert await refused.is_visible()
    assert await refused.eval_on_selector(".text", "e => e.innerText") == text
    assert await refused.eval_on_selector(".reason", "e => e.innerText") == REFUSED
    assert await page.input_value("#input") == text  # to shorten and send again, not to type again


async def test_a_message_that_reached_the_gateway_late_shows_where_the_gateway_took_it_in_every_tab(chat, page) -> None:
    web = await chat()
    released = asyncio.Event()

    async def held_until_released(route) -> None:  # a slow network, or the gateway restarting
        await released.wait()
        await route.continue_()

    await page.route("**/chat/api/messages", held_until_released)
    other = await page.context.new_page()
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await open_chat(other, f"{web.base}/chat?chat=c1")
    await page.fill("#input", "typed first, arrives second")
    await page.press("#input", "Enter")
    await other.fill("#input", "typed second, arrives first")
    await other.press("#input", "Enter")
    await page.wait_for_selector("[data-kind=reply]")
    released.set()
    await page.wait_for_selector("[data-kind=user]:not(.pending) >> text=typed first")
    await web.settled()
    expected = [("user", "typed second, arrives first"), ("reply", ANY_DEMO),
                ("user", "typed first, arrives second"), ("reply", ANY_DEMO)]
    for tab in (page, other):
        await tab.wait_for_function("() => document.querySelectorAll('[data-kind=reply]').length === 2")
        assert [(kind, text) for _, kind, text in await shown(tab)] == expected  # each answer below its question
    ids = await shown(page)
    assert ids == await shown(other)
    await page.reload()
    await page.wait_for_selector("body[data-state=connected]")
    assert await shown(page) == ids


async def test_a_reload_mid_turn_shows_working_and_stop_at_once(chat, page) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, model={"demo": {"child_steps": 30, "step_seconds": 1}})
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await page.fill("#input", LIST)
    await page.press("#input", "Enter")
    await page.wait_for_selector("#working", state="visible")
    await page.reload()
    await page.wait_for_selector("body[data-state=connected]")
    assert await page.is_visible("#stop")  # not only at the next "typing", seconds later
    await page.click("#stop")
    await page.wait_for_selector("#working", state="hidden")
    await page.reload()
    await page.wait_for_selector("body[data-state=connected]")
    assert await page.is_hidden("#working")


async def test_a_double_click_on_new_session_or_stop_sends_the_command_once(chat, page) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, model={"demo": {"child_steps": 30, "step_seconds": 1}})
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await page.dblclick("button.command[data-command='/new']")
    await page.wait_for_selector("[data-kind=command] >> text=Started a new session")
    await page.fill("#input", LIST)
    await page.press("#input", "Enter")
    await page.wait_for_selector("#working", state="visible")
    await page.dblclick("#stop")  # a second /stop would stop whatever runs next too
    await page.wait_for_selector("[data-kind=command] >> text=Stopped")
    await web.settled()
    await page.wait_for_selector("[data-role=user].pending", state="detached")
    assert [(kind, text[:4]) for _, kind, text in await shown(page)] == [
        ("user", "/new"), ("command", "Star"), ("user", "Comp"), ("user", "/sto"), ("command", "Stop")]


async def test_a_link_with_a_wrong_token_says_the_links_token_was_refused(chat, page) -> None:
    web = await chat(server={"host": "0.0.0.0", "port": 0, "console": False},
                     platforms={"web": {"enabled": True, "token": TOKEN}})
    await page.goto(f"{web.base}/chat?chat=c1#token=not-the-token")
    await page.wait_for_selector("body[data-state=login]")
    error = await page.wait_for_selector("#login-error", state="visible")
    assert await error.inner_text() == "The token in the link is not accepted; it may have been changed."
    assert "not-the-token" not in page.url
    await page.fill("#token", "still-not-it")
    await page.click("#login-form button[type=submit]")
    await page.wait_for_function("() => document.getElementById('login-error').innerText === 'That token was not accepted.'")
    await page.fill("#token", TOKEN)
    await page.click("#login-form button[type=submit]")
    await page.wait_for_selector("body[data-state=connected]")


async def test_a_refused_message_stays_through_a_reload_until_dismissed_and_edit_puts_it_back(chat, page) -> None:
    web = await chat()
    released = asyncio.Event()

    async def held_until_released(route) -> None:
        await released.wait()
        await route.continue_()

    await page.route("**/chat/api/messages", held_until_released)
    await open_chat(page, f"{web.base}/chat?chat=c1")
    text = "x" * 32_001
    await page.fill("#input", text)
    await page.press("#input", "Enter")
    await page.fill("#input", "typed meanwhile")
    released.set()
    await page.wait_for_selector("[data-kind=user].failed")
    assert await page.input_value("#input") == "typed meanwhile"  # not replaced: the refused text is in its bubble
    await page.reload()
    await page.wait_for_selector("body[data-state=connected]")
    refused = await page.wait_for_selector("[data-kind=user].failed")
    assert await refused.eval_on_selector(".text", "e => e.innerText") == text
    assert await refused.eval_on_selector(".reason", "e => e.innerText") == REFUSED
    assert await page.input_value("#input") == "typed meanwhile"  # the draft, kept through the reload too
    await (await refused.query_selector("button.edit")).click()
    both = "typed meanwhile\n\n" + text  # after the draft: neither is lost
    assert await page.input_value("#input") == both
    await (await refused.query_selector("button.dismiss")).click()  # unasked: the box holds its text
    await page.wait_for_selector("[data-kind=user].failed", state="detached")
    await page.reload()
    await page.wait_for_selector("body[data-state=connected]")
    assert await shown(page) == []
    assert await page.input_value("#input") == both


async def test_an_open_page_reconnects_by_itself_after_a_restart_and_shows_what_came_meanwhile_once(chat, page) -> None:
    web = await chat()
    await open_chat(page, f"{web.base}/chat?chat=c1")
    address = web.base
    await web.stop()  # as systemd restarting the gateway: the same address, the same state directory
    await page.wait_for_selector("body[data-state=reconnecting]")
    await page.fill("#input", "sent while it was away")  # retried, with the same key, until it is back
    await page.press("#input", "Enter")
    await web.start()
    assert web.base == address
    async with aiohttp.ClientSession() as http:  # another tab, quicker to reconnect
        await post_message(http, web.base, "c1", "hello from elsewhere", key="key-other-tab")
    await page.wait_for_function("() => document.querySelectorAll('[data-kind=reply]').length === 2")
    await web.settled()
    await page.wait_for_selector("body[data-state=connected]")
    await page.wait_for_selector("[data-role=user].pending", state="detached")
    got = [(kind, text) for _, kind, text in await shown(page)]
    assert sorted(text for kind, text in got if kind == "user") == ["hello from elsewhere", "sent while it was away"]
    assert [kind for kind, _ in got].count("reply") == 2 and len(got) == 4


async def test_a_file_the_agent_sends_is_a_link_that_downloads_it_under_its_name(chat, page, tmp_path) -> None:
    from agent.models.scripted import ScriptedModel

    data = "name,total\nÅsa,12\n".encode() * 100
    (tmp_path / "state" / "workspace").mkdir(parents=True)
    (tmp_path / "state" / "workspace" / "Q3 – totals.csv").write_bytes(data)
    model = ScriptedModel({"parent": [[
        {"tool_calls": [{"name": "send_file", "arguments": {"path": "Q3 – totals.csv", "caption": "**Q3** totals"}}]},
        {"text": "done"}]]})  # fmt: skip
    web = await chat(agent_model=model, agent={"toolsets": ["file"]},
                     platforms={"web": {"enabled": True, "token": TOKEN}})
    await open_chat(page, f"{web.base}/chat?chat=c1#token={TOKEN}")  # a plain link could not carry the token
    await page.fill("#input", "the numbers please")
    await page.press("#input", "Enter")
    await page.wait_for_selector("[data-kind=reply]")
    file = await page.wait_for_selector(".has-file")
    assert await file.eval_on_selector(".text", "e => e.innerHTML") == "<strong>Q3</strong> totals"
    assert await file.eval_on_selector(".file", "e => e.textContent") == "📎 Q3 – totals.csv 1.9 KB"
    async with page.expect_download() as downloading:
        await page.click(".has-file .file a")
    download = await downloading.value
    assert download.suggested_filename == "Q3 – totals.csv"
    assert Path(await download.path()).read_bytes() == data
    await page.reload()  # from the history: the same message, the same link
    await page.wait_for_selector("body[data-state=connected]")
    assert [kind for _, kind, _ in await shown(page)] == ["user", "interim", "reply"]
    assert await page.eval_on_selector(".has-file .file", "e => e.textContent") == "📎 Q3 – totals.csv 1.9 KB"


async def test_every_text_reads_against_its_background_in_light_and_in_dark(chat, page) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, agent={"gateway_notify_interval": 0.1},
                     model={"demo": {"child_steps": 30, "step_seconds": 1}})
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await page.fill("#input", "x" * 32_001)  # refused: shown in the danger colour
    await page.press("#input", "Enter")
    await page.wait_for_selector("[data-kind=user].failed")
    await page.fill("#input", "Run it:\n```\nmake test\n```\nthen `git push`, see https://example.com")
    await page.press("#input", "Enter")
    await page.wait_for_selector("[data-kind=reply]")
    await page.fill("#input", LIST)
    await page.press("#input", "Enter")
    await page.wait_for_selector("[data-kind=notice]")  # the muted progress card, and the Stop button
    await page.wait_for_selector("[data-role=user].pending", state="detached")  # faded only until confirmed
    faint = {}
    for scheme in ("light", "dark"):
        await page.emulate_media(color_scheme=scheme)
        faint[scheme] = await contrast_failures(page)
    assert faint == {"light": [], "dark": []}


# ARIA's rule: the nearest live region around an element, itself included, says how its changes are read out.
SPOKEN_AS = """el => {
  for (; el; el = el.parentElement) {
    if (el.hasAttribute("aria-live")) return el.getAttribute("aria-live");
    const implied = {log: "polite", status: "polite", alert: "assertive"}[el.getAttribute("role")];
    if (implied) return implied;
  }
  return null;
}"""


async def spoken_as(page, selector: str) -> str | None:
    """How a screen reader is told of changes to the element: "polite", "assertive", "off", or None."""
    return await page.eval_on_selector(selector, SPOKEN_AS)


async def test_a_screen_reader_hears_each_reply_and_the_progress_card_once_not_at_every_edit(chat, page) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, agent={"gateway_notify_interval": 0.1},
                     model={"demo": {"child_steps": 30, "step_seconds": 1}})
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await page.fill("#input", "hello")
    await page.press("#input", "Enter")
    await page.wait_for_selector("[data-kind=reply]")
    assert await page.get_attribute("#messages", "role") == "log"  # a chat's history: new lines are read out
    assert await spoken_as(page, "[data-kind=reply] .text") == "polite"
    await page.fill("#input", LIST)
    await page.press("#input", "Enter")
    notice = await page.wait_for_selector("[data-kind=notice]")
    first = await notice.get_attribute("data-text")
    await page.wait_for_function("([el, first]) => el.dataset.text !== first", arg=[notice, first])
    # Edited every few seconds all turn long: read out each time, it would drown the chat.
    assert await spoken_as(page, "[data-kind=notice] .text") == "off"


async def long_conversation(web, page, turns: int) -> None:
    """``turns`` messages and their replies in chat c1, shown in ``page`` (a short window: it scrolls)."""
    await page.set_viewport_size({"width": 375, "height": 500})
    await open_chat(page, f"{web.base}/chat?chat=c1")
    async with aiohttp.ClientSession() as http:
        for i in range(turns):
            await post_message(http, web.base, "c1", f"question {i}", key=f"key-long-{i}")
            await web.settled()
    await page.wait_for_function("n => document.querySelectorAll('[data-kind=reply]').length === n", arg=turns)


async def test_a_reconnect_leaves_the_reader_where_they_were_and_the_messages_as_they_were(chat, page) -> None:
    web = await chat()
    await long_conversation(web, page, 12)
    await page.eval_on_selector("#messages", "el => { el.scrollTop = 0; el.firstElementChild.marked = true; }")
    assert web.gateway is not None
    await web.gateway.adapters["web"].close_streams()  # a proxy's idle timeout, a network change
    await page.wait_for_selector("body[data-state=reconnecting]")
    await page.wait_for_selector("body[data-state=connected]")
    assert await page.eval_on_selector("#messages", "el => el.scrollTop") == 0  # still reading the start
    # The same elements, not drawn again: a screen reader does not read the whole conversation out again.
    assert await page.eval_on_selector("#messages", "el => el.firstElementChild.marked === true")
    assert len(await shown(page)) == 24
    await page.eval_on_selector("#messages", "el => { el.scrollTop = el.scrollHeight; }")
    await web.gateway.adapters["web"].close_streams()
    await page.wait_for_selector("body[data-state=reconnecting]")
    async with aiohttp.ClientSession() as http:  # said while the page was away: followed, at the bottom
        await post_message(http, web.base, "c1", "while away", key="key-away")
    await web.settled()
    await page.wait_for_function("() => document.querySelectorAll('[data-kind=reply]').length === 13")
    assert await page.eval_on_selector("#messages", "el => el.scrollHeight - el.scrollTop - el.clientHeight < 2")


async def test_a_message_from_another_tab_does_not_scroll_the_reader_away_from_what_they_read(chat, page) -> None:
    web = await chat()
    await long_conversation(web, page, 8)
    await page.eval_on_selector("#messages", "el => { el.scrollTop = 0; }")
    async with aiohttp.ClientSession() as http:
        await post_message(http, web.base, "c1", "from the phone", key="key-phone")
    await web.settled()
    await page.wait_for_function("() => document.querySelectorAll('[data-kind=reply]').length === 9")
    assert await page.eval_on_selector("#messages", "el => el.scrollTop") == 0
    await page.fill("#input", "and from here")  # one's own message: shown, at the bottom
    await page.press("#input", "Enter")
    await page.wait_for_selector("[data-kind=user] >> text=and from here")
    assert await page.eval_on_selector("#messages", "el => el.scrollHeight - el.scrollTop - el.clientHeight < 2")


async def test_dismissing_a_refused_message_whose_text_is_nowhere_else_asks_first(chat, page) -> None:
    web = await chat()
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await page.fill("#input", "x" * 32_001)
    await page.press("#input", "Enter")
    refused = page.locator("[data-kind=user].failed")
    await refused.wait_for()
    await page.fill("#input", "something else")  # the box holds other words: the bubble is the only copy
    asked: list[str] = []

    async def cancel(dialog) -> None:
        asked.append(dialog.message)
        await dialog.dismiss()

    page.once("dialog", cancel)
    await refused.get_by_role("button", name="Dismiss").click()
    assert asked == ["Dismiss this message? Its text is kept nowhere else."]
    assert await refused.count() == 1  # a slip of the finger loses nothing
    page.once("dialog", lambda dialog: dialog.accept())
    await refused.get_by_role("button", name="Dismiss").click()
    await refused.wait_for(state="detached")


async def test_a_message_that_waited_out_a_long_outage_is_sent_as_soon_as_the_page_reconnects(chat, page) -> None:
    web = await chat()
    await page.clock.install()  # the page's own timers: its retries wait long without the test waiting
    await open_chat(page, f"{web.base}/chat?chat=c1")

    async def offline(route) -> None:
        await route.abort("internetdisconnected")

    await page.route("**/chat/api/messages", offline)
    await page.fill("#input", "typed on the train")
    async with page.expect_event("requestfailed"):
        await page.press("#input", "Enter")
    for _ in range(6):  # each retry waits twice as long as the one before, up to 10 s
        async with page.expect_event("requestfailed"):
            await page.clock.fast_forward(10_000)
    await page.unroute("**/chat/api/messages")  # the network is back: the page's stream reconnects
    assert web.gateway is not None
    await web.gateway.adapters["web"].close_streams()
    await page.wait_for_selector("body[data-state=reconnecting]")
    await page.clock.fast_forward(1_000)
    await page.wait_for_selector("body[data-state=connected]")
    # Not up to 10 s later, faded all the while under "connected": the next retry is due in 10 s.
    await page.wait_for_selector("[data-role=user].pending", state="detached", timeout=5_000)
    await page.wait_for_selector("[data-kind=reply]")
