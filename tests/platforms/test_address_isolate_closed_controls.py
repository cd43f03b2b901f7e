"""A link is laid out left to right by itself (U+2066 … U+2069) only where a direction embedding, override or isolate
opened before it is still open (tests/platforms/test_address_direction_controls.py: one that is turns the link round).
Every link after the first opener anywhere in the message was: one after an isolate closed by its U+2069, or on a line
after the opener's (a line feed ends every embedding, override and isolate), so a message in Hebrew with
``\\u2067שלום\\u2069`` in it sent its address on Discord between ``<>``, which shows no preview, and with stray isolates
on Telegram and Slack. Whether one is open is the bidirectional algorithm's rule: checked against GNU FriBidi's."""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from platforms.base import Inbound, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html
from platforms.formatting.bare_urls import ISOLATE_END, ISOLATE_START, isolated
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

URL = "https://example.com/"
HEBREW = f"שלום \u2067שלום\u2069, מה נשמע?\n\nהנה הקישור:\n\n{URL}"


@pytest.mark.parametrize(("markdown", "discord", "slack", "telegram"), [
    # An isolate closed before the link: the link is as it is without one, Discord's bare and with its preview.
    (HEBREW, HEBREW, HEBREW.replace(URL, f"<{URL}>"), HEBREW),
    (f"\u2067x\u2069 {URL}", f"\u2067x\u2069 {URL}", f"\u2067x\u2069 <{URL}>", f"\u2067x\u2069 {URL}"),
    # An override its U+202C closes.
    (f"\u202ex\u202c {URL}", f"\u202ex\u202c {URL}", f"\u202ex\u202c <{URL}>", f"\u202ex\u202c {URL}"),
    # An opener on an earlier line, a line of a list or quote too.
    (f"\u202ex\n{URL}", f"\u202ex\n{URL}", f"\u202ex\n<{URL}>", f"\u202ex\n{URL}"),
    (f"- \u202ex\n- {URL}", f"- \u202ex\n- {URL}", f"• \u202ex\n• <{URL}>", f"• \u202ex\n• {URL}"),
    # A U+2069 closes the embeddings opened within its isolate.
    (f"\u2067\u202bx\u2069 {URL}", f"\u2067\u202bx\u2069 {URL}", f"\u2067\u202bx\u2069 <{URL}>",
     f"\u2067\u202bx\u2069 {URL}"),
    # What is still open: two overrides, one closed; an override a closer of nothing leaves open; an isolate a
    # U+202C cannot close; an embedding around a closed isolate.
    (f"\u202e\u202e x \u202c {URL}", f"\u202e\u202e x \u202c \u2066<{URL}>\u2069",
     f"\u202e\u202e x \u202c \u2066<{URL}>\u2069", f"\u202e\u202e x \u202c \u2066{URL}\u2069"),
    (f"\u202e\u2069 x {URL}", f"\u202e\u2069 x \u2066<{URL}>\u2069", f"\u202e\u2069 x \u2066<{URL}>\u2069",
     f"\u202e\u2069 x \u2066{URL}\u2069"),
    (f"\u2067\u202c x {URL}", f"\u2067\u202c x \u2066<{URL}>\u2069", f"\u2067\u202c x \u2066<{URL}>\u2069",
     f"\u2067\u202c x \u2066{URL}\u2069"),
    (f"\u202b\u2067x\u2069 {URL}", f"\u202b\u2067x\u2069 \u2066<{URL}>\u2069",
     f"\u202b\u2067x\u2069 \u2066<{URL}>\u2069", f"\u202b\u2067x\u2069 \u2066{URL}\u2069"),
    # A link the override reaches, then one after it closes.
    (f"\u202e [x](https://a.example/) \u202c {URL}", f"\u202e \u2066[x](https://a.example/)\u2069 \u202c {URL}",
     f"\u202e \u2066<https://a.example/|x>\u2069 \u202c <{URL}>",
     f'\u202e \u2066<a href="https://a.example/">x</a>\u2069 \u202c {URL}'),
])
def test_a_link_is_isolated_only_while_a_direction_control_is_open(
        markdown: str, discord: str, slack: str, telegram: str) -> None:
    assert discord_markdown.render(markdown) == discord
    assert slack_mrkdwn.render(markdown) == slack
    assert telegram_html.render(markdown) == telegram


fake = fake_discord()


@pytest.fixture
async def adapter(fake: FakeDiscord) -> AsyncIterator[DiscordAdapter]:
    async def sink(inbound: Inbound) -> None:
        return None

    adapter = adapter_for(fake)
    await adapter.start(sink)
    yield adapter
    await adapter.stop()
    await join_heartbeat_threads()


async def test_discord_keeps_the_preview_of_an_address_after_a_closed_isolate(
        fake: FakeDiscord, adapter: DiscordAdapter) -> None:
    channel = fake.dm_channel(42)
    await adapter.send(Outbound(chat_id=channel, thread_id=None, text=HEBREW))
    assert fake.bot_messages(channel)[-1].content == HEBREW


_FRIBIDI = ctypes.util.find_library("fribidi")
_LTR = 0x110  # FRIBIDI_PAR_LTR


def _levels(text: str) -> list[int]:
    """FriBidi's embedding level for each character of ``text``, each line laid out as a left-to-right paragraph (a
    line feed, too, at level 0). Each line by itself, as the algorithm's rule P1 splits a text: FriBidi lays out
    one paragraph at a time: in one call, no opener after a line feed held anything (``\\n\\u202ah``: 0 for ``h``)."""
    levels = []
    for line in text.split("\n"):
        levels += _paragraph_levels(line) + [0]
    return levels[:-1]


def _paragraph_levels(text: str) -> list[int]:
    lib, n = ctypes.CDLL(_FRIBIDI), len(text)
    if not n:
        return []
    chars = (ctypes.c_uint32 * n)(*map(ord, text))
    types, brackets, levels = (ctypes.c_uint32 * n)(), (ctypes.c_uint32 * n)(), (ctypes.c_int8 * n)()
    lib.fribidi_get_bidi_types(chars, n, types)
    lib.fribidi_get_bracket_types(chars, n, types, brackets)
    assert lib.fribidi_get_par_embedding_levels_ex(types, brackets, n, ctypes.byref(ctypes.c_uint32(_LTR)), levels)
    return list(levels)


_PIECES = st.sampled_from(["a", "א", " ", "\n", "\ufdd4", "LINK", *map(chr, range(0x202A, 0x202F)),
                           *map(chr, range(0x2066, 0x206A))])


_FRIBIDI_NEEDED = pytest.mark.skipif(_FRIBIDI is None, reason="GNU FriBidi (libfribidi) is not installed")


@_FRIBIDI_NEEDED
@settings(max_examples=500)
@given(pieces=st.lists(_PIECES, max_size=40))
def test_a_link_is_isolated_where_fribidi_lays_it_out_within_an_embedding(pieces: list[str]) -> None:
    _check_against_fribidi(pieces)


# Deeper than the algorithm's 125 levels, past which it ignores an opener and the closer that matches it.
@_FRIBIDI_NEEDED
@pytest.mark.parametrize("pieces", [
    ["\u202e"] * 130 + ["\u202c"] * 129 + ["LINK"],
    ["\u202e"] * 130 + ["\u202c"] * 130 + ["LINK"],
    ["\u2067"] * 130 + ["\u2069"] * 129 + ["LINK"],
    ["\u2067"] * 130 + ["\u2069"] * 130 + ["LINK"],
    ["\u2067"] * 124 + ["\u202e", "\u2067", "\u202b", "\u202c", "\u2069", "\u202c"] + ["\u2069"] * 124 + ["LINK"],
    ["\u202e"] * 124 + ["\u2067", "\u2067", "\u202b", "\u2069", "\u202c", "\u2069"] + ["\u202c"] * 124 + ["LINK"],
])
def test_a_link_is_isolated_within_embeddings_deeper_than_their_limit(pieces: list[str]) -> None:
    _check_against_fribidi(pieces)


def _check_against_fribidi(pieces: list[str]) -> None:
    # In a left-to-right paragraph, an address's first letter is at level 0 unless an embedding, override or isolate
    # holds it.
    text, rendered, starts = "", "", []
    for piece in pieces:
        if piece == "LINK":
            starts.append(len(text))
            text, rendered = text + URL, rendered + f"{ISOLATE_START}{URL}{ISOLATE_END}"
        else:
            text, rendered = text + piece, rendered + piece
    levels = _levels(text)
    sent = isolated(rendered, lambda link: f"[{link}]")
    assert [at > 0 and sent[at - 1] == "[" for at in _starts(sent)] == [levels[at] > 0 for at in starts]


def _starts(sent: str) -> list[int]:
    found, at = [], sent.find(URL)
    while at >= 0:
        found.append(at)
        at = sent.find(URL, at + 1)
    return found
