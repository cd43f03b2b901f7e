"""split_text beside what the text shows as typed or as nothing: ``*`` and ``_`` no style pairs at a cut, a link
written out inside an italic, and a text of only empty code blocks or link definitions, which must still be sent."""

from __future__ import annotations

import pytest

from gateway.splitting import safe_measure, split_text
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import telegram_html
from platforms.telegram import TelegramAdapter
from tests.gateway.test_splitting_shown_markers import _split

_TELEGRAM = safe_measure(TelegramAdapter("123:token"))


def _rendered(markdown: str) -> tuple[str, list[dict]]:
    return parse_html(telegram_html.render(markdown))


@pytest.mark.parametrize("platform", ["web", "telegram", "discord", "slack"])
def test_a_cut_beside_markers_the_text_shows_as_typed_shows_them_once(platform):
    # The "** **" in the bold is text. Cut after "-", the next part reopened the bold before it: "**** ** ---**",
    # shown as typed; cut before "---", the part closed it after it: "**aaa - ****".
    text = "aaaaa bbbbb cccc dddd eeee **aaa - ** ** ---** ccc ddd eee fff ggg hhh"
    for limit in range(20, 60):
        _split(text, limit, platform)


@pytest.mark.parametrize("platform", ["web", "telegram", "discord", "slack"])
def test_a_cut_within_a_word_keeps_its_underscores_text(platform):
    # "_i_" before an address too long to share a part with it: alone, "_i_" was an italic "i".
    text = "xx yy zz ww vv uu _i_https://example.com/abc zz yy ww vv uu tt"
    for limit in range(20, 32):
        parts = _split(text, limit, platform)
        assert not any(e["type"] == "italic" for p in parts for e in _rendered(p)[1]), (limit, parts)


def test_a_link_written_out_in_an_italic_stays_italic():
    # Written out, a space went between the address and the italic's closing "*": "*the docs https://e.co/a/b *"
    # closes nothing, and every part showed a "*" as typed.
    text = "see *[the docs](https://e.co/a/b)*, then more"
    for limit in range(18, 28):
        parts = split_text(text, limit)
        assert any(e["type"] == "italic" and "https://e.co/a/b" in shown[e["offset"]:e["offset"] + e["length"]]
                   for shown, entities in map(_rendered, parts) for e in entities), (limit, parts)
    for limit in range(10, 28):  # too small for the address and the italic's markers: no marker shown all the same
        for platform in ("web", "telegram"):
            _split(text, limit, platform)


def test_a_part_given_up_as_plain_text_leaves_the_closer_of_a_style_it_holds():
    # Limits of 16 and 17 hold the address but not the italic's markers: the part after it began with the italic's
    # closing "*" (or the part ended with it), shown as typed.
    for limit in (16, 17):
        parts = split_text("see *[the docs](https://e.co/a/b)*, then more", limit)
        assert "*" not in "".join(_rendered(p)[0] for p in parts), parts


@pytest.mark.parametrize("text", [
    "```\n```\n" * 20,
    "~~~py\n~~~\n\n" * 30,
    "".join(f"[d{i}]: https://e.co/{i}\n" for i in range(30)),
])
def test_a_text_showing_nothing_is_sent_as_written_however_long(text):
    # Its parts showed nothing and were left out: no part at all, the turn's reply vanished. Short, a renderer sends
    # such a text as written; so it is when long too.
    parts = split_text(text, 60, _TELEGRAM)
    assert parts and all(_TELEGRAM(p) <= 60 for p in parts)
    assert "".join(_rendered(p)[0] for p in parts).replace("\n", "") == text.replace("\n", "")


def test_empty_code_blocks_among_text_are_still_left_out():
    # What the fallback above must not change: among text, they show nothing and are left out.
    parts = split_text("word " * 20 + "\n\n```\n```\n" * 10 + "\n\nend", 40, _TELEGRAM)
    shown = [_rendered(p)[0] for p in parts]
    assert " ".join(shown).split() == ["word"] * 20 + ["end"], parts


@pytest.mark.parametrize("text", [
    "see https://e.co/abc_`x` tail words here",
    "**see https://e.co/x__`code` and more words**",
    "**see https://e.co/x.~~`code` and more words**",
])
def test_markers_an_address_leaves_out_get_no_backslash_at_a_cut(text):
    # Cut between the "_" an address ends before and the code span after it, the "_" got a backslash that the
    # address took in: "https://e.co/abc\_" linked, and shown with its backslash.
    for limit in range(16, 30):
        parts = split_text(text, limit)
        shown = "".join(_rendered(p)[0] for p in parts)
        assert "\\" not in shown, (limit, parts)
