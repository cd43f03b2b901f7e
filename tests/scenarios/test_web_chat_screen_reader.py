"""The web chat page (chat.js, live.js) as a screen reader and a keyboard meet it, in a real headless chromium
against the adapter alone: what the log and the status line are told to read out, who each message is from, and
where the focus goes.

How a change is read out follows ARIA's rule, the nearest live region around the element, itself included."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.web_client import Intake, chat_alone, open_chat

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

SPOKEN_AS = """els => els.map((el) => {
  for (; el; el = el.parentElement) {
    if (el.hasAttribute("aria-live")) return el.getAttribute("aria-live");
    const implied = {log: "polite", status: "polite", alert: "assertive"}[el.getAttribute("role")];
    if (implied) return implied;
  }
  return null;
})"""


def said(n: int) -> list[dict[str, Any]]:
    """Question ``n`` and its answer, as the gateway's history has them."""
    return [{"id": f"user:q{n}", "role": "user", "kind": "user", "text": f"question {n}", "time": float(n),
             "edited": False},
            {"id": f"m{n}", "role": "assistant", "kind": "reply", "text": f"answer {n}", "time": float(n),
             "edited": False}]  # fmt: skip


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[Any, Intake, str]]:
    intake = Intake()
    intake.messages = said(0) + said(1)
    async with chat_alone(intake, tmp_path / "files") as (adapter, base):
        yield adapter, intake, base


async def spoken_as(page: Any) -> dict[str, str | None]:
    """Each message's id: how a screen reader is told of it ("polite": read out; "off": not)."""
    ids = await page.eval_on_selector_all("#messages > article", "els => els.map((e) => e.dataset.id)")
    return dict(zip(ids, await page.eval_on_selector_all("#messages > article", SPOKEN_AS), strict=True))


async def reconnect_after(page: Any, adapter: Any, intake: Intake, missed: list[dict[str, Any]]) -> None:
    """The page's stream dropped, and ``missed`` said before it is back."""
    back = asyncio.Event()

    async def held(route: Any) -> None:
        await back.wait()
        await route.continue_()

    await page.route("**/chat/api/events?*", held)
    await adapter.close_streams()
    await page.wait_for_selector("body[data-state=reconnecting]")
    intake.messages += missed
    back.set()
    await page.wait_for_selector("body[data-state=connected]")
    await page.unroute("**/chat/api/events?*", held)


async def test_a_history_is_not_read_out_but_what_comes_live_and_what_a_short_drop_missed_are(served, page) -> None:
    adapter, intake, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    # The conversation so far, there to read: read out on opening, it drowned everything for minutes.
    assert await spoken_as(page) == dict.fromkeys(["user:q0", "m0", "user:q1", "m1"], "off")
    intake.messages.append(said(2)[1])
    adapter._streams.publish("c1", "message", said(2)[1])
    await page.wait_for_selector("[data-id=m2]")
    assert (await spoken_as(page))["m2"] == "polite"

    await reconnect_after(page, adapter, intake, said(3))  # an answer that came while the stream was down
    assert {k: v for k, v in (await spoken_as(page)).items() if k.endswith("3")} == {"user:q3": "polite",
                                                                                     "m3": "polite"}
    await reconnect_after(page, adapter, intake, [m for n in range(4, 40) for m in said(n)])  # a long catch-up
    spoken = await spoken_as(page)
    assert len(spoken) == 4 + 1 + 2 + 72
    assert {spoken[m["id"]] for n in range(4, 40) for m in said(n)} == {"off"}


async def test_each_message_says_who_said_it(served, page) -> None:
    _, _, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.fill("#input", "hello")
    await page.press("#input", "Enter")
    await page.wait_for_selector("[data-kind=user]:not(.pending) >> text=hello")
    assert await page.locator("#messages").aria_snapshot() == "\n".join([
        '- log "Messages":',
        "  - article: \"You: question 0\"",
        "  - article: \"Agent: answer 0\"",
        "  - article: \"You: question 1\"",
        "  - article: \"Agent: answer 1\"",
        "  - article: \"You: hello\"",
    ])
    # Said, not shown: the bubble's side and colour tell who said it.
    assert await page.eval_on_selector("[data-id=m0] .who", "e => e.getBoundingClientRect().width") <= 1


async def test_the_status_is_read_out_when_it_changes_not_at_each_try_to_reconnect(served, page) -> None:
    adapter, _, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.eval_on_selector("#status", """el => { window.rewritten = 0;
      new MutationObserver((records) => { window.rewritten += records.length; }).observe(el, {childList: true}); }""")
    tries = 0
    third = asyncio.Event()  # tried a third time: the first two tries' refusals are shown

    async def away(route: Any) -> None:  # the gateway restarting: each try answered 503
        nonlocal tries
        tries += 1
        if tries == 3:
            third.set()
        await route.fulfill(status=503)

    await page.route("**/chat/api/events?*", away)
    await adapter.close_streams()
    await asyncio.wait_for(third.wait(), 15)
    assert await page.text_content("#status") == "reconnecting…"
    assert await page.evaluate("window.rewritten") == 1  # "connected" to "reconnecting…", then nothing new to say


async def test_stopping_the_turn_from_the_keyboard_leaves_the_focus_in_the_message_box(served, page) -> None:
    adapter, intake, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    adapter._streams.publish("c1", "typing", {})
    await page.wait_for_selector("#working:not([hidden])")
    await page.focus("#stop")
    await page.keyboard.press("Enter")
    await page.wait_for_selector("[data-kind=user]:not(.pending) >> text=/stop")
    assert intake.texts == ["/stop"]
    adapter._streams.publish("c1", "idle", {})  # the turn stopped: the working line and its Stop button go
    await page.wait_for_selector("#working", state="hidden")
    # Not lost with the button: a keyboard would start again from the top of the page.
    assert await page.evaluate("document.activeElement.id") == "input"
