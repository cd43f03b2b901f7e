"""A web address the model writes as itself, on Telegram: Telegram links it by itself (a url entity), by its
own rule for where an address ends (TDLib's find_urls), which is not CommonMark's. Where the two differ, the
address goes as a link to itself (``<a href>``, a text_link entity: exact); elsewhere it stays as written.

FakeTelegram finds no url entities of its own: what these tests read is the text_link the adapter sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from platforms.base import Outbound
from platforms.fakes.telegram import FakeTelegram
from platforms.formatting import telegram_html, telegram_urls
from platforms.telegram import TelegramAdapter

WIKI = "https://en.wikipedia.org/wiki/Python_(programming_language)"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def adapter(fake: FakeTelegram) -> AsyncIterator[TelegramAdapter]:
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    yield adapter
    await adapter.stop()


async def send(fake: FakeTelegram, adapter: TelegramAdapter, markdown: str) -> dict[str, Any]:
    await adapter.send(Outbound(chat_id="42", thread_id=None, text=markdown))
    return fake.messages["42"][-1]


def links(message: dict[str, Any]) -> list[tuple[str, str]]:
    """(the text, its address) of each text_link (texts here are BMP-only)."""
    text = message["text"]
    return [(text[e["offset"]:e["offset"] + e["length"]], e["url"]) for e in message["entities"]
            if e["type"] == "text_link"]


@pytest.mark.parametrize(
    ("markdown", "address"),
    [
        # Telegram takes in CJK punctuation and all after it: it linked "https://example.com/docs，然后点击安装".
        ("文档见https://example.com/docs，然后点击安装", "https://example.com/docs"),
        # A trailing "_", "*" or "~" Telegram keeps: it linked ".../tmp_", a page that is not there.
        ("files at https://example.com/tmp_ and more", "https://example.com/tmp"),
        ("see https://example.com/a~ ok", "https://example.com/a"),
        # A bracket it did not open ends Telegram's address where it is, and a trailing "(" it leaves out.
        ("see https://example.com/a)b now", "https://example.com/a)b"),
        ("see https://example.com/f( now", "https://example.com/f("),
        # Code right after it: Telegram's url would cross the code, and Telegram drops such a url.
        ("run https://example.com/a`b` now", "https://example.com/a"),
        # A host without a dot Telegram does not link at all.
        ("check https://localhost:8080/health now", "https://localhost:8080/health"),
        # After an "@" Telegram reads a mention first ("@https"), and drops the url it overlaps.
        ("ping @https://example.com/x now", "https://example.com/x"),
    ],
)
async def test_an_address_telegram_would_link_otherwise_goes_as_a_link_to_itself(
        fake: FakeTelegram, adapter: TelegramAdapter, markdown: str, address: str) -> None:
    message = await send(fake, adapter, markdown)
    assert address in message["text"]
    assert links(message) == [(address, address)]


@pytest.mark.parametrize(
    "markdown",
    [
        f"See {WIKI} for more.",
        "(see https://example.com/docs), then",
        "Try https://example.com/start! Or https://example.com/?q=a?",
        "https://example.com/a… and “https://example.com/b” and 'https://example.com/c'",
        "**https://example.com/a_b**, https://ru.wikipedia.org/wiki/Москва; https://example.com/a%20b.",
        "> quoted https://example.com/q.\n\nafter",
    ],
)
async def test_an_address_telegram_links_as_written_stays_as_written(fake: FakeTelegram, adapter: TelegramAdapter,
                                                                     markdown: str) -> None:
    message = await send(fake, adapter, markdown)
    assert links(message) == []
    assert "<a " not in telegram_html.render(markdown)


def test_the_link_is_the_address_as_written() -> None:
    # Not percent-encoded, "&" as written; the text escaped as any other.
    assert telegram_html.render("见https://例子.example/路径?a=1&b=2，好") == (
        '见<a href="https://例子.example/路径?a=1&amp;b=2">https://例子.example/路径?a=1&amp;b=2</a>，好')


def test_a_link_to_itself_counts_as_an_entity(adapter: TelegramAdapter) -> None:
    # Telegram reads 100 entities a message: a part holds no more of these links than it can keep.
    assert adapter.spans("see https://example.com/a ok") == 0
    assert adapter.spans("见https://example.com/a，好") == 1
    assert adapter.measure(" ".join(["见https://e.co/a，好"] * 101)) > adapter.text_limit


@pytest.mark.parametrize(
    ("text", "linked"),
    [  # TDLib's own cases (test/message_entities.cpp, TEST(MessageEntities, url)), those with a scheme
        ("http://telegram.org/?asd=123#123.", "http://telegram.org/?asd=123#123"),
        ("http://test.google.com/?q=abc()}[]def", "http://test.google.com/?q=abc()"),
        ("http://test.google.com/?q=abc([{)]}def", "http://test.google.com/?q=abc([{)]}def"),
        ("http://test.google.com/?q=abc){}[]def", "http://test.google.com/?q=abc"),
        ("https://ai.telegram.org/bot%20bot/test-...", "https://ai.telegram.org/bot%20bot/test-"),
        ("('http://telegram.org/a-b/?br=ie&lang=en',)", "http://telegram.org/a-b/?br=ie&lang=en"),
        ("https://a.de'bc@c.com", "https://a.de"),
        ("https://t.me/abcdef…", "https://t.me/abcdef"),
        ("http://google.com/‖", "http://google.com/"),
        ("👉http://ab.com/cdefgh-1IJ", "http://ab.com/cdefgh-1IJ"),
        ("аHTTP://telegram.org", "HTTP://telegram.org"),
        ("http://ÀТеСт.МоСкВач", "http://ÀТеСт.МоСкВач"),
        ("http://google_.com", ""),
        ("http://a.a", ""),
        ("sHTTP://telegram.org", ""),
        ("...👉http://ab.com/cdefgh-1IJ", ""),
        ("https://t.m…", ""),
    ],
)
def test_where_telegram_ends_an_address_is_tdlibs_rule(text: str, linked: str) -> None:
    found = telegram_urls.candidates(text)
    scheme = text.lower().find("http")
    assert (telegram_urls.fixed(text[scheme:found[scheme]]) if scheme in found else "") == linked


@pytest.mark.parametrize(
    ("markdown", "address"),
    [
        # Telegram takes out a paragraph separator before it looks: it linked "https://example.com/anext".
        ("see https://example.com/a\u2029next", "https://example.com/a"),
        # Of two right-to-left marks Telegram makes the first a zero-width non-joiner, which it takes in.
        ("ראה https://example.com/a\u200f\u200f עוד", "https://example.com/a"),
    ],
)
async def test_what_telegram_takes_out_or_changes_before_it_looks_is_taken_out_or_changed(
        fake: FakeTelegram, adapter: TelegramAdapter, markdown: str, address: str) -> None:
    message = await send(fake, adapter, markdown)
    assert links(message) == [(address, address)]


@pytest.mark.parametrize("mark", ["\u200f", "\u200b", "\u2060"])
async def test_an_invisible_mark_after_an_address_is_not_part_of_it(fake: FakeTelegram, adapter: TelegramAdapter,
                                                                    mark: str) -> None:
    # A right-to-left mark after an address in Hebrew or Arabic, a zero-width space: Markdown took it into the
    # address, Telegram ends the address before it. Sent as a link to itself, it went to .../a%E2%80%8F.
    markdown = f"ראה https://example.com/a{mark} עוד"
    message = await send(fake, adapter, markdown)
    assert links(message) == []
    assert "<a " not in telegram_html.render(markdown)


def test_a_look_alike_of_telegrams_domain_telegram_refuses_to_link_is_never_made_a_link() -> None:
    """Telegram links no teiegram.org address (a phishing look-alike): a link to itself would get around that."""
    assert "<a " not in telegram_html.render("see https://teiegram.org/login_ now")
    assert "<a " not in telegram_html.render("see https://TEIEGRAM.org/a)b")
