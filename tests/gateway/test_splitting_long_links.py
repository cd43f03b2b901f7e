"""split_text on a link longer than a part, with Telegram's measure: no part shows the link's Markdown, nothing
the reader would see is lost, and every part fits as Telegram counts it (the fake parses the HTML as it does)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.splitting import split_text
from platforms.base import utf16_length
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import slack_mrkdwn, telegram_html
from platforms.telegram import TelegramAdapter

_MEASURE = TelegramAdapter("123:token").measure
_LIMIT = TelegramAdapter("123:token").text_limit


def _shown(parts: list[str], limit: int) -> list[tuple[str, list[dict]]]:
    shown = [parse_html(telegram_html.render(part)) for part in parts]
    assert all(utf16_length(text) <= limit for text, _ in shown)
    assert all("](" not in text and "[" not in text for text, _ in shown), [text for text, _ in shown]
    return shown


def _without_spaces(text: str) -> str:
    return "".join(text.split())


def test_a_label_longer_than_a_part_is_cut_into_links_to_the_same_address():
    label = " ".join(f"word{n}" for n in range(1000))
    shown = _shown(split_text(f"intro\n\n[{label}](https://example.com/x) after", _LIMIT, _MEASURE), _LIMIT)
    assert _without_spaces("".join(text for text, _ in shown)) == _without_spaces(f"intro{label}after")
    linked = [text[e["offset"]:e["offset"] + e["length"]] for text, entities in shown for e in entities
              if e["type"] == "text_link" and e["url"] == "https://example.com/x"]
    assert len(linked) >= 2 and _without_spaces("".join(linked)) == _without_spaces(label)
    assert all(not piece.startswith("rd") for piece in linked)  # cut between words, not inside one


def test_an_address_too_long_to_carry_is_written_out_after_its_label():
    url = "https://example.com/" + "a" * 5000
    shown = _shown(split_text(f"see [the docs]({url}) end", _LIMIT, _MEASURE), _LIMIT)
    assert _without_spaces("".join(text for text, _ in shown)) == _without_spaces(f"see the docs {url} end")


def test_a_long_label_is_never_cut_in_its_address_either():
    # The last piece of the label fitted, its address not: the cut fell inside "](https://...)".
    text = "- item [**" + "bold word " * 30 + "tail** tail](https://e.co/x) after"
    shown = _shown(split_text(text, 80, _MEASURE), 80)
    assert _without_spaces("".join(text for text, _ in shown)) == _without_spaces("• item" + "bold word " * 30
                                                                                  + "tail tail after")
    assert all(e["url"] == "https://e.co/x" for _, entities in shown for e in entities if e["type"] == "text_link")


def test_a_link_that_fits_a_part_is_still_moved_whole():
    link = "[the docs](https://example.com/docs)"
    parts = split_text("x " * 3000 + link + " end", _LIMIT, _MEASURE)
    assert any(link in part for part in parts)


def test_a_label_without_spaces_is_not_cut_inside_an_escape():
    # The hard cut fell between "\" and "_": the part ended "\](http://u)", its "]" escaped, its Markdown shown.
    shown = _shown(split_text("[" + "a\\_" * 80 + "](http://u)", 80), 80)
    assert "".join(text for text, _ in shown) == "a_" * 80


def test_a_label_is_not_cut_inside_an_image_it_holds():
    # The space cut fell in the image's alt text: "![a b c](http://u)" then "[d](http://i/x.png) ...](http://u)".
    text = "[" + "word " * 12 + "![a b c d](http://i/x.png) " + "word " * 12 + "](http://u)"
    _shown(split_text(text, 80), 80)


@pytest.mark.parametrize("after", ["s are here", "/x more", "_b_ more"])
def test_a_link_written_out_keeps_its_address_apart_from_the_next_word(after):
    # "[label](url)s" became "label urls": Slack (and Telegram, Discord clients) linked the address with the "s".
    url = "https://example.com/" + "p" * 25
    parts = split_text("(see [" + "label " * 9 + f"]({url}){after}", 80)
    assert any(f"<{url}>" in slack_mrkdwn.render(p) for p in parts), [slack_mrkdwn.render(p) for p in parts]


def test_an_address_with_a_title_too_long_to_carry_is_written_out_without_the_title():
    # The title's space hid the target's length: neither carried nor written out, the cut showed "](http...".
    text = "[" + "label " * 20 + '](http://example.com/a "a title") end'
    shown = "".join(text for text, _ in _shown(split_text(text, 80, _MEASURE), 80))
    assert _without_spaces(shown) == _without_spaces("label " * 20 + "http://example.com/a end")


def test_an_address_with_parentheses_too_long_to_carry_is_written_out():
    url = "https://e.co/a_(b)_" + "c" * 30
    shown = "".join(text for text, _ in _shown(split_text("[" + "label " * 9 + f"]({url}) end", 80, _MEASURE), 80))
    assert _without_spaces(shown) == _without_spaces("label " * 9 + f"{url} end")


def _is_subsequence(small: str, big: str) -> bool:
    rest = iter(big)
    return all(c in rest for c in small)


@settings(max_examples=80, deadline=None)
@given(before=st.integers(0, 60), label=st.lists(st.sampled_from(["ab", "cde", "😀", "中文"]), min_size=1,
                                                    max_size=60),
       path=st.integers(0, 120), after=st.integers(0, 60), limit=st.integers(24, 200))
def test_no_cut_shows_a_links_markdown_nor_loses_what_it_shows(before, label, path, after, limit):
    text = "x " * before + f"[{' '.join(label)}](https://e.co/{'p' * path})" + " y" * after
    shown = _shown(split_text(text, limit, _MEASURE), limit)
    whole = parse_html(telegram_html.render(text))[0]
    assert _is_subsequence(_without_spaces(whole), _without_spaces("".join(text for text, _ in shown)))
