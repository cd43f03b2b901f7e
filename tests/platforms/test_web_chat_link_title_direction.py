"""A link's title in the web chat page (platforms/web_static/markdown.js, in a real headless chromium), the tooltip
shown as the pointer rests on the link, holds no direction control to turn it round, as its label does not
(tests/platforms/test_web_chat_link_label_direction.py): ``[x](https://evil.example "\\u202e/moc.elgoog.www//:sptth")``
showed ``https://www.google.com/`` there, for a link to evil.example. A title reading as an address shows them
percent-encoded, as a label reading as one does; any other title drops them. The page's adapter is served alone,
the answers in its history."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.web_client import Intake, chat_alone, open_chat, replies

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

TITLES = "els => els.flatMap((el) => [...el.querySelectorAll('a')].map((a) => [a.title, a.href]))"
REVERSED = "\u202e/moc.elgoog.www//:sptth"


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[Intake, str]]:
    intake = Intake()
    async with chat_alone(intake, tmp_path / "files") as (_, base):
        yield intake, base


async def test_a_titles_direction_controls_are_dropped_or_percent_encoded_where_it_reads_as_an_address(
        served, page) -> None:
    intake, base = served
    answers = [f'Log in [here](https://evil.example/a "{REVERSED}")',
               "[here](https://evil.example/b 'https://5.6.7.8\u200f@1.2.3.4/') "
               "[there](https://evil.example/c (\u2067x\u2069 \u200ey\u061c))",
               "[here][r] and [r]\n\n[r]: https://evil.example/d \"\u202bsee \u202aHTTPS://\u202cb\u202d\"",
               '[here](https://evil.example/e "&#x202E;/moc.elgoog.www//:sptth")',  # an entity reference, read
               '| where |\n|---|\n| [here](https://evil.example/f "https://\u202eb") |',
               '![a picture](https://evil.example/h.png "\u202egnp.olleh")',  # an image is a link, its title too
               # A title with none keeps what it holds; one holding other format characters keeps those too.
               '[here](https://example.com/g "a \u200bzero-width space, \u05e9\u05dc\u05d5\u05dd")']
    intake.messages = replies(answers)
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.wait_for_function(f"document.querySelectorAll('[data-kind=reply] .text[dir]').length === {len(answers)}")
    assert await page.eval_on_selector_all("[data-kind=reply] .text", TITLES) == [
        ["/moc.elgoog.www//:sptth", "https://evil.example/a"],
        ["https://5.6.7.8%E2%80%8F@1.2.3.4/", "https://evil.example/b"],
        ["x y", "https://evil.example/c"],
        *[["see HTTPS://b", "https://evil.example/d"]] * 2,  # a reference definition's, for each of its links
        ["/moc.elgoog.www//:sptth", "https://evil.example/e"],
        ["https://%E2%80%AEb", "https://evil.example/f"],
        ["gnp.olleh", "https://evil.example/h.png"],
        ["a \u200bzero-width space, \u05e9\u05dc\u05d5\u05dd", "https://example.com/g"]]
