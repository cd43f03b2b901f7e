"""A block's inline content parsed a piece of lines at a time (`platforms.formatting.inline_lines`) gives the tokens
markdown-it makes of it whole, and so the same rendering: what a line leaves open (an emphasis, a link's label or
title, a code span, an image's alt text, a hard break) keeps it from being cut off there."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from platforms.formatting import discord_markdown, inline_lines, markdown, slack_mrkdwn, telegram_html
from platforms.formatting.markdown import Context

_RENDERERS = (telegram_html._RENDERER, slack_mrkdwn._RENDERER, discord_markdown._RENDERER)
_BITS = ["*", "**", "***", "_", "__", "~~", "~", "`", "``", "[", "]", "(", ")", "](", "[a]", "[a](", "(u)", "(u", "<",
         ">", "\\", "&", "&#97;", "&#95;", "&#42;", "&eacute;", "!", "![", "![a](u", "https://x.org/a_b",
         "https://x.org/a*", "<https://y.org>", "<a@b.co>", "word", "w_x", "a*b", " ", "  ", "\t", "\"t\"", "[ref]",
         "[ref][]", "[x][ref]", "*a*", "_b_", "`c`", "[l](u)", "[l](<u v>)", "[l](u \"t", "\")", "é", "1.", "-", "#",
         ">", "|", "\\*", "\\_", "\\[", "\\`", "[a]: /u", ":", "http:", "a_", "_a", "[[a]]", "“", "—",
         "**[a](u)**", "[**a**](u)"]
_LINES = ["x  ", "y\\", " *a", "*a ", "===", "---", "> q", "- i", "1. i", "2. j", "# h", "| a | b |", "|---|---|",
          "[ref]: /r 'T'", "    code", "", "```", "  lazy", "\tTab"]
_line = st.one_of(st.lists(st.sampled_from(_BITS), min_size=1, max_size=8).map("".join), st.sampled_from(_LINES))
_text = st.lists(_line, min_size=1, max_size=14).map("\n".join)
_REFERENCES = markdown.definitions("[ref]: /r\n[a]: /a 'T'\n")


def _shape(tokens) -> list[tuple]:
    return [(t.type, t.tag, t.nesting, t.level, t.content, t.markup, t.info, sorted((t.attrs or {}).items()),
             _shape(t.children or ())) for t in tokens]


def _pieced(text: str, references: markdown.Definitions) -> list[list[tuple]]:
    """Each inline token's children, made of its pieces' tokens joined by soft line breaks."""
    out = []
    for tok in markdown._parse_by_lines(text, references):
        if tok.type == "inline" and "references" in tok.meta:
            pieces = list(inline_lines.pieces(markdown.parser(), tok.content, tok.meta["references"]))
            joined = []
            for n, piece in enumerate(pieces):
                joined += ([("softbreak", "br", 0, 0, "", "", "", [], [])] if n else []) + _shape(piece.tokens)
            out.append(joined)
        elif tok.type == "inline":
            out.append(_shape(tok.children))
    return out


def _whole(text: str, references: markdown.Definitions) -> list[list[tuple]]:
    return [_shape(tok.children) for tok in markdown.parse(text, references) if tok.type == "inline"]


def _cut_after_every_line():
    """Pieces of a line, wherever one may be cut off (they are a few hundred characters at least)."""
    return mock.patch.object(inline_lines, "_SHORTEST", 1)


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(text=_text, with_references=st.booleans())
def test_the_pieces_tokens_joined_are_the_whole_contents(text, with_references):
    references = _REFERENCES if with_references else ()
    with _cut_after_every_line():
        assert _pieced(text, references) == _whole(text, references)


@pytest.mark.parametrize("text", [
    "*open\nclose*", "~~open\nclose~~", "[label\nmore](https://x.org)", "`code\nspan`", "![alt `x](i.png)\ny`",
    "[ref](https://x.org\n)", '[l](https://x.org "title\nends")', "&eacute;_x\ny_", "space \nafter",
    "hard  \nbreak", "back\\\nslash", "a\n   indented", "a_b\n_c_", "word *\n*", "2 * 3\nand *it*",
])
def test_what_a_line_leaves_open_is_read_on_into_the_next(text):
    with _cut_after_every_line():
        assert _pieced(text, _REFERENCES) == _whole(text, _REFERENCES)
        for renderer in _RENDERERS:
            tokens = markdown.parse(text, _REFERENCES)
            assert "\n\n".join(renderer._run(text, _REFERENCES)) == \
                renderer._blocks(tokens, 0, len(tokens), Context()), renderer


def test_lines_that_close_what_they_open_are_cut_off_after_each():
    text = "\n".join(f"**step {i}**: set `x={i}` per [doc](https://x.org/{i}) in *config_{i}*" for i in range(20))
    with _cut_after_every_line():
        tok = next(t for t in markdown._parse_by_lines(text, ()) if t.type == "inline")
        assert [p.text for p in inline_lines.pieces(markdown.parser(), tok.content, {})] == text.split("\n")
