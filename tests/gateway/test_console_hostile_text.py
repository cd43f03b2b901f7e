"""The operator console shows what strangers wrote as text, in a real headless chromium: a chat's list items
(the subagents' goals), an event set aside as a dead letter, a logged warning. Nothing they write runs, nor
turns the page's own words around; and another site's page cannot press the console's buttons.

A real gateway with the demo model serves the page; every wait is for something on a page, never for time.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp.web import Request, Response, get

from tests.polling import until
from tests.web_client import post_message, serve_routes, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

EVIL = '"><img src=x onerror=pwned=1><svg onload=pwned=2><script>pwned=3</script><a href=javascript:pwned=4>x</a>'
RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: what follows it shows backwards until something ends it
CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"  # Unicode's direction controls
# Each policy violation the page met (an inline handler or script the Content-Security-Policy blocked):
# none at all means nothing a stranger wrote became markup, not even markup the policy then stopped.
WATCH = """window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(e.violatedDirective));"""
# Whether `word`, within the text of `el`, shows left to right: its first letter left of its second.
READS_LEFT_TO_RIGHT = """(el, word) => {
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node; (node = walker.nextNode());) {
    const at = node.data.indexOf(word);
    if (at < 0) continue;
    const x = (i) => { const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
                       return r.getBoundingClientRect().x; };
    return x(at) < x(at + 1);
  }
  throw new Error(word + " is not shown");
}"""

# Another site's page (another origin: another port) pressing Stop (STOP, the action's URL) with what a page can
# send unasked: a form posted as text/plain (the closest to JSON a form can send), a no-cors fetch and an image
# asking with a GET; and framing the console (CONSOLE) to lay its buttons under a visitor's clicks. Each, once
# answered, counts in `done`.
ATTACK = """<!doctype html><body>
<iframe name="sink"></iframe>
<form id="form" method="post" action="STOP" enctype="text/plain" target="sink">
  <input name='{"x":"' value='"}'></form>
<iframe id="framed" src="CONSOLE"></iframe>
<script>
  window.done = 0;
  const one = () => { window.done++; };
  document.getElementsByName("sink")[0].addEventListener("load", one, { once: true });
  document.getElementById("framed").addEventListener("load", one, { once: true });
  document.getElementById("form").submit();
  fetch("STOP", { method: "POST", mode: "no-cors", body: "{}" }).then(one, one);
  const image = new Image();
  image.onerror = image.onload = one;
  image.src = "STOP";
</script></body>"""


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def test_what_strangers_wrote_shows_as_text_and_runs_nothing(chat, page) -> None:
    web = await chat(model={"demo": {"child_steps": 1, "step_seconds": 0.05}})
    now = time.time()
    web.gateway.store.db.write_many(
        "INSERT INTO gateway_dead_letters (platform, event_id, payload, turn_id, attempts, error, received_at, dead_at)"
        " VALUES ('web', ?, ?, NULL, 3, ?, ?, ?)",
        [("ev-" + EVIL, json.dumps({"chat_id": "c" + EVIL, "text": EVIL}), "failed on " + EVIL, now, now)])
    logging.getLogger("gateway.test").warning("a stranger wrote %s", EVIL)
    async with aiohttp.ClientSession() as http:
        await post_message(http, web.base, "c1", f"Compare these:\n- [stall] {EVIL}\n- [fail] {EVIL}", key="key-evil-1")
    await page.add_init_script(WATCH)
    await page.goto(f"{web.base}/console")
    await page.wait_for_selector("#work .child[data-state=RUNNING] .goal")
    await page.wait_for_selector("#delegations [data-subagent-id] .error")
    await page.wait_for_selector("#dead tr")
    await page.wait_for_selector("#errors li")
    shown = await page.evaluate("""() => ({
      goal: document.querySelector("#work .child .goal").textContent,
      tasks: [...document.querySelectorAll("#delegations [data-subagent-id]")].map((task) => task.textContent),
      letter: [...document.querySelectorAll("#dead td")].map((td) => td.textContent),
      warned: document.querySelector("#errors li:last-child").textContent,  // the newest first
      markup: document.querySelectorAll("main img, main svg, main script, main a, main iframe").length,
      pwned: window.pwned ?? null, violations: window.__violations })""")
    assert shown["goal"] == f"[stall] {EVIL}"
    running, failed = shown["tasks"]
    assert running == f"RUNNING [stall] {EVIL}" and failed.startswith(f"FAILED [fail] {EVIL} — ")
    chat_cell, event, _, _, error, text, _ = shown["letter"]
    assert [chat_cell, event, error, text] == ["web · c" + EVIL, "ev-" + EVIL, "failed on " + EVIL, EVIL]
    assert shown["warned"].endswith(f"WARNING gateway.test: a stranger wrote {EVIL}")
    assert (shown["markup"], shown["pwned"], shown["violations"]) == (0, None, [])
    # Had some text become markup after all, the page's policy would stop what it ran.
    await page.evaluate("""() => document.querySelector("#errors").insertAdjacentHTML("beforeend",
      '<li><img src=x onerror="pwned=5"><a id=js href="javascript:pwned=6">x</a></li>')""")
    await page.click("#js")
    await page.wait_for_function("() => window.__violations.length >= 2")
    assert await page.evaluate("window.pwned ?? null") is None


async def test_a_right_to_left_override_in_a_goal_or_a_logged_message_stays_within_it(chat, page) -> None:
    web = await chat(model={"demo": {"child_steps": 1, "step_seconds": 0.05}})
    try:
        raise ValueError("boom at the end")
    except ValueError:
        logging.getLogger("gateway.test").warning("a stranger wrote %sevil", RLO, exc_info=True)
    async with aiohttp.ClientSession() as http:
        await post_message(http, web.base, "c1", f"Compare these:\n- [stall] {RLO}apples\n- [fail] {RLO}pears",
                           key="key-bidi-1")
    await page.goto(f"{web.base}/console")
    failed = page.locator("#delegations [data-subagent-id]", has=page.locator(".error"))
    await failed.wait_for()
    # The page's own words after a stranger's text read as written: the failed task's error, the warning's exception.
    assert await failed.locator(".error").evaluate(READS_LEFT_TO_RIGHT, "failure")
    assert await page.locator("#errors li:last-child").evaluate(READS_LEFT_TO_RIGHT, "ValueError")
    # The question before a stop quotes the goal isolated (U+2068 ... U+2069), without its override.
    asked: list[str] = []

    async def cancel(dialog) -> None:
        asked.append(dialog.message)
        await dialog.dismiss()

    page.once("dialog", cancel)
    await page.locator("#work .child", has_text="apples").get_by_role("button", name="Stop").click()
    await page.wait_for_selector("#work .child button:enabled")
    assert asked == ["Interrupt the subagent \u201c\u2068[stall] apples\u2069\u201d? "
                     "It ends with the partial output it has."]


async def test_a_quote_of_a_goal_or_a_message_holds_no_direction_control(chat, page) -> None:
    # The quote is an isolate (U+2068 ... U+2069), but one the text closed itself (a stray U+2069) ended it early:
    # an override after that ran on over the rest of the button's name and of the question; an isolate the text
    # opened and never closed took the closing quote into it.
    web = await chat(model={"demo": {"child_steps": 1, "step_seconds": 0.05}})
    now = time.time()
    web.gateway.store.db.write_many(
        "INSERT INTO gateway_dead_letters (platform, event_id, payload, turn_id, attempts, error, received_at, dead_at)"
        " VALUES ('web', 'ev-1', ?, NULL, 3, 'boom', ?, ?)",
        [(json.dumps({"chat_id": "c2", "text": "\u2067\u05e9\u05dc\u05d5\u05dd friends"}), now, now)])
    web.gateway.store.db.write(
        "INSERT INTO gateway_outbox (key, platform, chat_id, kind, op, text, silent, sequence, status, created_at,"
        " last_error) VALUES ('t-1:reply', 'web', 'c3', 'reply', 'send', ?, 0, 0, 'failed', ?, 'boom')",
        (f"\u200f{CONTROLS}report\u2069{RLO}fdp.exe", now))
    async with aiohttp.ClientSession() as http:
        await post_message(http, web.base, "c1", f"Compare these:\n- [stall] invoice\u2069{RLO}gpj.exe",
                           key="key-bidi-2")
    await page.goto(f"{web.base}/console")
    await page.wait_for_selector("#work .child[data-state=RUNNING] button")
    await page.wait_for_selector("#dead tr button")
    await page.wait_for_selector("#failed tr button")
    names = await page.evaluate("""() => [...document.querySelectorAll(
      "#work .child button, #failed button, #dead button")].map((button) => button.getAttribute("aria-label"))""")
    quote = "\u201c\u2068{}\u2069\u201d".format
    shalom = "\u05e9\u05dc\u05d5\u05dd"
    assert names == [
        "Stop the subagent " + quote("[stall] invoicegpj.exe"),
        *(f"{word} the message to web · c3 " + quote("reportfdp.exe") for word in ("Retry", "Dismiss")),
        *(f"{word} the event from web · c2 " + quote(f"{shalom} friends") for word in ("Retry", "Dismiss")),
    ]
    asked: list[str] = []

    async def cancel(dialog) -> None:
        asked.append(dialog.message)
        await dialog.dismiss()

    page.once("dialog", cancel)
    await page.locator("#work .child[data-state=RUNNING]").get_by_role("button", name="Stop").click()
    await page.wait_for_selector("#work .child button:enabled")
    assert asked == ["Interrupt the subagent " + quote("[stall] invoicegpj.exe") + "? "
                     "It ends with the partial output it has."]


async def test_another_sites_page_cannot_stop_a_subagent_nor_frame_the_console(chat, page) -> None:
    web = await chat(model={"demo": {"child_steps": 1, "step_seconds": 0.05}})
    async with aiohttp.ClientSession() as http:
        await post_message(http, web.base, "c1", "Compare these:\n- [stall] apples", key="key-csrf-1")
        [child] = await until(lambda: running(http, web.base))
    stop = f"{web.base}/console/api/children/{child}/stop"
    attack = ATTACK.replace("STOP", stop).replace("CONSOLE", f"{web.base}/console")

    async def attacker(request: Request) -> Response:
        return Response(text=attack, content_type="text/html")

    runner, other_site = await serve_routes([get("/", attacker)])
    try:
        await page.goto(other_site)
        await page.wait_for_function("() => window.done === 4")
    finally:
        await runner.cleanup()
    async with aiohttp.ClientSession() as http:
        assert await running(http, web.base) == [child]
    assert not page.frame(name="framed").url.startswith(web.base)  # refused: chromium's error page instead


async def running(http: aiohttp.ClientSession, base: str) -> list[str]:
    """The ids of the subagents the console's state shows running."""
    async with http.get(f"{base}/console/api/state") as response:
        work = (await response.json())["work"]
    return [c["id"] for w in work for c in w["children"] if c["state"] == "RUNNING"]
