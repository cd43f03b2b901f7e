"""What a screen reader is told when the web chat page reconnects (chat.js), in a real headless chromium against the
adapter alone: the few messages a short drop missed are read out one by one, a longer catch-up as its number, once.

What is "heard" is each addition to the page whose nearest live region reads it out (ARIA's rule, as
`test_web_chat_screen_reader` has it), recorded as it happens."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scenarios.test_web_chat_screen_reader import reconnect_after, said, served  # noqa: F401
from tests.web_client import open_chat

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

# Each added node's text, unless an element added with it holds it, or its nearest live region is "off" (or none).
LISTEN = """() => {
  const spoken = (el) => {
    for (; el; el = el.parentElement) {
      if (el.hasAttribute("aria-live")) return el.getAttribute("aria-live") !== "off";
      if (["log", "status", "alert"].includes(el.getAttribute("role"))) return true;
    }
    return false;
  };
  window.heard = [];
  new MutationObserver((records) => {
    const added = new Set(records.flatMap((r) => [...r.addedNodes]));
    const within = (n) => {
      for (let p = n.parentNode; p; p = p.parentNode) if (added.has(p)) return true;
      return false;
    };
    for (const node of added) {
      const el = node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement;
      if (node.isConnected && !within(node) && spoken(el) && node.textContent.trim()) heard.push(node.textContent);
    }
  }).observe(document.body, {childList: true, subtree: true});
}"""


async def heard_while(page: Any, adapter: Any, intake: Any, missed: list[dict[str, Any]]) -> list[str]:
    """What a screen reader is told while the page reconnects after a drop in which ``missed`` was said."""
    await page.evaluate("window.heard.length = 0")
    await reconnect_after(page, adapter, intake, missed)
    return await page.evaluate("window.heard")


async def test_a_long_catch_up_is_said_as_its_number_a_short_one_message_by_message(served, page) -> None:  # noqa: F811
    adapter, intake, base = served
    await open_chat(page, f"{base}/chat?chat=c1")
    assert await page.get_by_text("new messages came").count() == 0  # the conversation so far: not news
    await page.evaluate(LISTEN)

    # Three: what a short drop missed, each read out as it would have been live.
    assert await heard_while(page, adapter, intake, said(2) + said(3)[:1]) == [
        "reconnecting…",
        "You: question 2",
        "Agent: answer 2",
        "You: question 3",
        "connected",
    ]
    # More: not one by one (a long outage's hundreds would drown everything), nor nothing at all.
    assert await heard_while(page, adapter, intake, said(3)[1:] + said(4) + said(5)) == [
        "reconnecting…",
        "5 new messages came while the chat was disconnected.",
        "connected",
    ]
    assert await page.locator("[data-id=m5]").count() == 1
    # The same number again is news again.
    assert await heard_while(page, adapter, intake, said(6) + said(7) + said(8)[:1]) == [
        "reconnecting…",
        "5 new messages came while the chat was disconnected.",
        "connected",
    ]
    # Said, not shown: the messages themselves show where they belong.
    said_only = page.get_by_text("new messages came")
    assert await said_only.evaluate("e => e.getBoundingClientRect().width * e.getBoundingClientRect().height") <= 1
