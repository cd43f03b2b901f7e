"""split_text in a quote: a part starting within a quoted paragraph (at a line's ``>`` or within its text) is in
the quote too, the styles and link labels it reopens after the quote's markers, at any depth, in a list item too."""

from __future__ import annotations

import pytest

from gateway.splitting import split_text
from platforms.base import utf16_length
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import markdown, telegram_html

_WORDS = " ".join(f"word{i}" for i in range(12))


def _quote_depths(part: str) -> set[int]:
    """How deep in quotes each paragraph of ``part`` is."""
    depths, depth = set(), 0
    for tok in markdown.block_tokens(part):
        depth += {"blockquote_open": 1, "blockquote_close": -1}.get(tok.type, 0)
        if tok.type == "paragraph_open":
            depths.add(depth)
    return depths


def _shown_quoted(part: str, styles: set[str]) -> str:
    """What Telegram shows of ``part``, checked to be all in a quote, ``styles`` over all of it that is not "after"."""
    shown, entities = parse_html(telegram_html.render(part))
    types = {e["type"] for e in entities}
    assert {"blockquote", *styles} <= types, (part, entities)
    quote = next(e for e in entities if e["type"] == "blockquote")
    assert (quote["offset"], quote["length"]) == (0, utf16_length(shown)), (part, entities)
    assert not any(marker in shown for marker in ("~~", "**", "[", "](", ">")), (part, shown)
    return shown


def test_a_style_reopened_in_a_quote_goes_after_its_marker():
    # The reviewer's case: the part began "~~> and more", no quote, its ">" shown as text.
    for style in ("~~", "**"):
        parts = split_text(f"> one {style}struck words here\n> and more struck{style} after", 30)
        assert parts[1] == f"> {style}and more struck{style} after", parts


@pytest.mark.parametrize(("first", "later", "depth"), [
    ("> ", "> ", 1),
    ("> > ", "> > ", 2),
    (">> ", ">> ", 2),
    ("- > ", "  > ", 1),  # a quote in a list item: the part leaves the item out, not the quote
    ("> ", ">    ", 1),  # a line going on indented: not indented code once the styles are reopened
])
@pytest.mark.parametrize(("style", "entity"), [("~~", "strikethrough"), ("**", "bold"), ("_", "italic")])
def test_a_style_open_across_a_quotes_lines_is_reopened_in_the_quote(first, later, depth, style, entity):
    text = f"{first}Intro {style}{_WORDS}\n{later}{_WORDS}{style}"
    for limit in range(70, 130, 7):
        parts = split_text(text, limit)
        assert len(parts) > 1, limit
        for part in parts[1:]:
            assert _quote_depths(part) == {depth}, (limit, parts)
            _shown_quoted(part, {entity})


@pytest.mark.parametrize("first", ["> ", "> > ", "- > "])
def test_a_part_starting_within_a_quoted_line_is_in_the_quote(first):
    # Cut within the line, the rest of it was a paragraph of its own, out of the quote (a style's markers before it).
    text = f"{first}Intro ~~{_WORDS} {_WORDS}~~ and then {_WORDS} x > 5 y - z"
    for limit in range(40, 90, 5):
        parts = split_text(text, limit)
        assert len(parts) > 2, limit
        for part in parts[1:]:
            assert _quote_depths(part) == {first.count(">")}, (limit, parts)
        shown = "".join(parse_html(telegram_html.render(p))[0] for p in parts).replace(" ", "")
        assert shown == parse_html(telegram_html.render(text))[0].replace(" ", ""), (limit, parts)


def test_a_link_label_cut_in_a_quote_goes_on_in_the_quote():
    # Its label was reopened without the quote: "[word19\n> word0 ...](http://x.y)" opened a quote in the label's
    # middle, and the link showed its brackets.
    text = f"> one [{_WORDS} {_WORDS}\n> {_WORDS} {_WORDS}](http://x.y) after"
    for limit in (60, 80, 100):
        parts = split_text(text, limit)
        assert len(parts) > 3, limit
        for part in parts[1:]:
            assert _quote_depths(part) == {1}, (limit, parts)
            shown, entities = parse_html(telegram_html.render(part))
            assert [e["url"] for e in entities if e["type"] == "text_link"] == ["http://x.y"], (limit, parts)
            assert "[" not in shown and "](" not in shown, (limit, parts)
