"""A link's label in the web chat page (platforms/web_static/markdown.js, in a real headless chromium) reads as
written, whatever direction controls the text holds, as on the other platforms (platforms/formatting/bare_urls.py,
`link_face` and `isolated`). A right-to-left override in ``[\\u202e/moc.elgoog.www//:sptth](https://evil.example)``
showed ``https://www.google.com/`` for a link to evil.example; a right-to-left mark in a label reading as an address
showed ``https://5.6.7.8\\u200f@1.2.3.4/`` as ``https://5.6.7.81.2.3.4@/``; and an override opened in the text
before a link turned its label round (``here now`` as ``won ereh``), an embedding or isolate its punctuation. A model
says what a page it read tells it to: such an answer is a link to click, disguised. The page's adapter is served
alone, the answers in its history."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.web_client import Intake, chat_alone, open_chat, replies

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

# Each link of the answers: its text, the address it goes to, and whether its text's characters are laid out left to
# right in the order they are read (each starting no further left than the one before).
LAID_OUT = """els => els.flatMap((el) => [...el.querySelectorAll("a")].map((a) => {
  const text = a.firstChild;
  let left = -Infinity, inOrder = true;
  for (let i = 0; i < text.length; i++) {
    const range = document.createRange();
    range.setStart(text, i);
    range.setEnd(text, i + 1);
    const x = range.getBoundingClientRect().left;
    inOrder &&= x >= left;
    left = x;
  }
  return [a.textContent, a.href, inOrder];
}))"""
# Each answer's direction, and that of each of its links.
DIRECTIONS = """els => els.map((el) => [getComputedStyle(el).direction,
                                      ...[...el.querySelectorAll("a")].map((a) => getComputedStyle(a).direction)])"""
REVERSED = "\u202e/moc.elgoog.www//:sptth"


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[Intake, str]]:
    intake = Intake()
    async with chat_alone(intake, tmp_path / "files") as (_, base):
        yield intake, base


async def shown(served, page, answers: list[str], probe: str):
    """``probe`` of the bubbles of ``answers``, the chat's history, as a fresh page shows them."""
    intake, base = served
    intake.messages = replies(answers)
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.wait_for_function(f"document.querySelectorAll('[data-kind=reply] .text[dir]').length === {len(answers)}")
    return await page.eval_on_selector_all("[data-kind=reply] .text", probe)


async def test_a_labels_direction_controls_are_dropped_or_percent_encoded_where_it_reads_as_an_address(
        served, page) -> None:
    answers = [f"Log in [{REVERSED}](https://evil.example/a)",
               "Or [https://5.6.7.8\u200f@1.2.3.4/](https://evil.example/b) or "
               "[https://\u202eb](https://evil.example/c)",
               "![\u202egnp.olleh](https://evil.example/d.png) [\u202ex `\u202ey` *\u2067z*][r]\n\n"
               "[r]: https://evil.example/e",
               f"| where |\n|---|\n| [{REVERSED}](https://evil.example/f) |\n\n# [{REVERSED}](https://evil.example/g)",
               # An address written as itself, between <> or in a label, shows its own percent-encoded as before.
               "<https://\u202emoc.elgoog.www@evil.example/> [<https://\u2067x>](https://evil.example/h)"]
    assert await shown(served, page, answers, LAID_OUT) == [
        ["/moc.elgoog.www//:sptth", "https://evil.example/a", True],
        ["https://5.6.7.8%E2%80%8F@1.2.3.4/", "https://evil.example/b", True],
        ["https://%E2%80%AEb", "https://evil.example/c", True],
        ["gnp.olleh", "https://evil.example/d.png", True],  # an image's alt text is its link's label
        ["x y z", "https://evil.example/e", True],  # a reference's, in code and styles too
        ["/moc.elgoog.www//:sptth", "https://evil.example/f", True],  # a table cell's
        ["/moc.elgoog.www//:sptth", "https://evil.example/g", True],  # a heading's
        ["https://%E2%80%AEmoc.elgoog.www@evil.example/"] * 2 + [True],
        ["https://%E2%81%A7x", "https://evil.example/h", True]]


async def test_an_override_opened_before_a_link_leaves_its_label_as_written(served, page) -> None:
    # The text after the link is the override's, as on the other platforms: what it turns is no link.
    answers = ["See \u202e this [here, now!](https://evil.example/a) then",
               "**\u202e** [here, now!](https://evil.example/b)",  # opened within a style before the link
               "# \u2067 [here, now!](https://evil.example/c)",
               "| \u202d |\n|---|\n| \u202e [here, now!](https://evil.example/d) |",
               "- \u202b [here, now!](https://evil.example/e)\n\n> \u202e [here, now!](https://evil.example/f)",
               "&#x202E; as an entity reference [here, now!](https://evil.example/g)"]
    assert await shown(served, page, answers, LAID_OUT) == [
        ["here, now!", f"https://evil.example/{end}", True] for end in "abcdefg"]


async def test_a_label_keeps_its_words_direction_and_one_reading_as_an_address_is_left_to_right(served, page) -> None:
    # The isolate a link is in after an override leaves its words in the message's direction, which they decide as
    # before (a Hebrew message starting with a link is right to left); a label reading as an address is laid out as
    # one written as itself is, left to right, whatever the message around it.
    answers = ["[שלום עולם](https://example.com/a) ok \u2067x\u2069",
               "שלום [https://example.com/b?x=1](https://example.com/b?x=1) עולם"]
    assert await shown(served, page, answers, DIRECTIONS) == [["rtl", "rtl"], ["rtl", "ltr"]]
