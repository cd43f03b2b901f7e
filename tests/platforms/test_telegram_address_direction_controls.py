"""Direction controls in or before a link the model writes, on Telegram (Slack's and Discord's:
tests/platforms/test_address_direction_controls.py). Telegram takes embeddings and overrides (U+202A–U+202E) out of a
message itself, but keeps isolates (U+2066–U+2069) and marks, and its apps lay a message out by Unicode's
bidirectional algorithm. ``<https://\\u20675.6.7.8@1.2.3.4/> then`` was sent as a link showing that text, laid out (by
GNU FriBidi) as ``https://then /1.2.3.4@5.6.7.8``: host 5.6.7.8 to the eye, 1.2.3.4 to the link. A mark in a bare
address (``https://5.6.7.8\\u200f@1.2.3.4/``) was sent as it came, and a link after an isolate opened in the text was
laid out with it (``\\u2067 https://1.2.3.4/`` as ``/https://1.2.3.4``). An address shows its controls
percent-encoded, a label none, and a link after an embedding, override or isolate is a left-to-right isolate
(U+2066 … U+2069)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.base import Outbound
from platforms.fakes.telegram import FakeTelegram
from platforms.formatting import telegram_html
from platforms.telegram import TelegramAdapter

EVIL = "moc.elgoog.www@evil.example/"


@pytest.mark.parametrize(("markdown", "expected"), [
    # As written, Telegram links it itself, percent-encoded as an address bar shows it.
    ("<https://\u20675.6.7.8@1.2.3.4/> then", "https://%E2%81%A75.6.7.8@1.2.3.4/ then"),
    (f"Log in at https://\u2067{EVIL} then go on", f"Log in at https://%E2%81%A7{EVIL} then go on"),
    (f"[https://\u2067{EVIL}](https://\u2067{EVIL})",
     f'<a href="https://%E2%81%A7{EVIL}">https://%E2%81%A7{EVIL}</a>'),
    (f"[log in](https://\u2067{EVIL})", f'<a href="https://%E2%81%A7{EVIL}">log in</a>'),
    # A label's controls go: reversed, it read as another address.
    ("[\u2067/moc.elgoog.www//:sptth](https://evil.example/)",
     '<a href="https://evil.example/">/moc.elgoog.www//:sptth</a>'),
    ("[https\u200f//:\u200fbank.example](https://evil.example)",
     '<a href="https://evil.example">https//:bank.example</a>'),
    # Marks within a bare address: Telegram would end it at the first, so it goes as a link to itself, encoded.
    ("https://5.6.7.8\u200f@1.2.3.4/",
     '<a href="https://5.6.7.8%E2%80%8F@1.2.3.4/">https://5.6.7.8%E2%80%8F@1.2.3.4/</a>'),
    # After an isolate or override each link is laid out by itself; Telegram ends a bare address at the U+2069.
    ("\u2067 https://1.2.3.4/", "\u2067 \u2066https://1.2.3.4/\u2069"),
    # A label that reads as another address (an IPv4 host and a path) is written out, the link's own after it.
    ("\u2067 [1.2.3.4/5.6.7.8](https://x.example/)",
     '\u2067 \u20661.2.3.4/5.6.7.8 (<a href="https://x.example/">https://x.example/</a>)\u2069'),
    ("\u202e [/moc.elgoog.www//:sptth](https://evil.example/) **https://x.example/**",
     '\u202e \u2066<a href="https://evil.example/">/moc.elgoog.www//:sptth</a>\u2069 '
     '<b>\u2066https://x.example/\u2069</b>'),
    # An isolate after a link turns nothing of it round: the link stays as it was.
    ("see https://x.example/ then \u2067 this", "see https://x.example/ then \u2067 this"),
    # A mark at an address's end still follows it, outside the isolate.
    ("\u2067 https://x.example/a\u200f b", "\u2067 \u2066https://x.example/a\u2069\u200f b"),
])
def test_telegram_shows_a_link_as_the_address_it_goes_to(markdown: str, expected: str) -> None:
    assert telegram_html.render(markdown) == expected


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def adapter(fake: FakeTelegram) -> AsyncIterator[TelegramAdapter]:
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    yield adapter
    await adapter.stop()


async def test_telegram_gets_each_address_as_the_address_it_links_to(
        fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    await adapter.send(Outbound(chat_id="42", thread_id=None, text=(
        "Log in at <https://\u20675.6.7.8@1.2.3.4/> or https://5.6.7.8\u200f@1.2.3.4/ then "
        "\u2067[1.2.3.4/5.6.7.8](https://evil.example/)")))
    message = fake.messages["42"][-1]
    text = message["text"]
    assert text == ("Log in at https://%E2%81%A75.6.7.8@1.2.3.4/ or https://5.6.7.8%E2%80%8F@1.2.3.4/ then "
                    "\u2067\u20661.2.3.4/5.6.7.8 (https://evil.example/)\u2069")  # another address: written out
    assert [(text[e["offset"]:e["offset"] + e["length"]], e["url"]) for e in message["entities"]
            if e["type"] == "text_link"] == [("https://5.6.7.8%E2%80%8F@1.2.3.4/", "https://5.6.7.8%E2%80%8F@1.2.3.4/"),
                                             ("https://evil.example/", "https://evil.example/")]
