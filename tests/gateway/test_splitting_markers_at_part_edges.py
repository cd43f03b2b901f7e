"""split_text and the markers at a part's edges: a part of only a bullet and a style's opening markers before an
address longer than a part (``- **`` alone), a strikethrough reopened before a ``~`` of its text (``~~~``: a code
fence), and a link written out whose label opens a block at a line's start (``[>](…)`` read as a quote)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.splitting import split_text
from platforms.formatting import markdown
from tests.gateway.test_splitting_shown_markers import _shown, _split

ADDRESS = "https://example.com/" + "x" * 100
PLATFORMS = ["web", "telegram", "discord", "slack"]

# A part of only quote, list item and style markers.
_ONLY_MARKERS = re.compile(r"[ \t>]*(?:(?:[-+*]|\d{1,9}[.)])[ \t>]*)*[*_~`]*")


def _fences(part: str) -> list[str]:
    return [t.type for t in markdown.block_tokens(part) if t.type in ("fence", "code_block")]


def _blocks(part: str) -> list[str]:
    return [t.type for t in markdown.block_tokens(part) if t.type in ("blockquote_open", "heading_open")]


@pytest.mark.parametrize("style", ["**", "_", "~~", "***", "__", "*"])
@pytest.mark.parametrize("marker", ["- ", "* ", "1. ", "> ", "", "Intro "])
def test_a_style_opening_before_an_address_longer_than_a_part_goes_with_it(marker, style):
    # The cut went before the address, right after the style's markers: "- **" was sent alone, a bullet showing "**".
    text = f"Intro.\n\n{marker}{style}{ADDRESS}{style} and words\n- next\n"
    for platform in PLATFORMS:
        for limit in (40, 60, 90):
            parts = _split(text, limit, platform)
            assert not [p for p in parts if _ONLY_MARKERS.fullmatch(p)], (limit, parts)


_word = st.text(alphabet="abcdefgh", min_size=1, max_size=9)
_marker = st.sampled_from(["", "- ", "* ", "1. ", "> ", "> - "])
# Styles of one marker character: a part that just holds an address and one character of a closing "**", "__" or
# "~~" ends between them, the next part that character alone (``a __https://x.org/a…a__`` at limit 62), and one of
# an address in angle brackets may hold its ">" alone between the markers (``***>***``): older faults, left for now
# (the cases above, of every style, hold).
_style = st.sampled_from(["*", "_"])
_long = st.builds("https://x.org/{}".format, st.text(alphabet="abc", min_size=40, max_size=120))
_line = st.one_of(st.builds(" ".join, st.lists(_word, min_size=1, max_size=6)),
                  st.builds(lambda m, s, t, w: f"{m}{s}{t}{s} {w}", _marker, _style, _long, _word),
                  st.builds(lambda w, s, t: f"{w} {s}{t}{s}", _word, _style, _long))


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(_line, min_size=1, max_size=5), limit=st.integers(min_value=30, max_value=70))
def test_no_part_is_only_markers_of_a_line_or_a_style(lines, limit):
    for part in split_text("\n".join(lines) + "\n", limit):
        assert not _ONLY_MARKERS.fullmatch(part), part


def test_a_strikethrough_reopened_before_a_tilde_of_its_text_opens_no_code_block():
    # Reopened before "~10", the part read "~~~10 minutes~~": a code fence, the rest of the part shown as code.
    text = "Both builds pass. ~~The old runner takes ~10 minutes and ~2 GB~~ now the new one is faster."
    for limit in range(12, 60):
        parts = split_text(text, limit)
        assert not [p for p in parts if _fences(p)], (limit, parts)
        for platform in ("web", "telegram"):
            _split(text, limit, platform)


# Words, some after or before a lone "~" ("~10 minutes"); a strikethrough nested in one is left out (see below).
_struck = st.lists(st.one_of(_word, st.builds("~{}".format, _word), st.builds("{}~".format, _word)),
                   min_size=1, max_size=8).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(before=st.lists(_word, max_size=4).map(" ".join), struck=_struck, limit=st.integers(min_value=12, max_value=40))
def test_no_part_opens_a_code_block_the_text_does_not(before, struck, limit):
    text = f"{before} ~~{struck}~~ end".strip()
    if _fences(text):
        return
    assert not [p for p in split_text(text, limit) if _fences(p)]


@pytest.mark.parametrize("label", [">", "> go", "#", "## title", "-", "+ more", "```", "~~~"])
@pytest.mark.parametrize("line", ["{}", "- {}", "> {}", "Intro.\n{}"])
def test_a_link_written_out_at_a_lines_start_keeps_its_label_as_text(line, label):
    # Its address too long to repeat, the link was written out as "> https://…": a quote, its ">" not shown (and
    # the parts after it quoted); "#" an empty heading, "-" a bullet.
    text = line.format(f"[{label}](https://example.com/abcdef)") + " x"
    for limit in range(12, 24):
        for platform in PLATFORMS:
            parts = _split(text, limit, platform)
            assert not [p for p in parts if _fences(p)], (limit, parts)


@pytest.mark.parametrize("path", ["a_b" * 40, "snake_case_path/" * 8, "~user/" * 20, "a\\b" * 40])
@pytest.mark.parametrize("style", ["**", "~~", "_"])
def test_an_address_cut_after_a_marker_of_its_own_still_closes_the_style(style, path):
    # The address's piece ended with its "_" (a "~", a backslash), which would join the closers: the part was sent plain
    # instead, "- **https://…snake_" showing the "**" it opened; and "~~" reopened before "~user" opened a code block.
    text = f"Intro.\n\n- {style}https://example.com/{path}{style} and words\n"
    for limit in range(30, 80):
        parts = split_text(text, limit)
        assert not [p for p in parts if style + "https" in _shown(p)[0] or _fences(p)], (limit, parts)


@pytest.mark.parametrize("label", [" > go", "  # title", "    code", " - item"])
@pytest.mark.parametrize("line", ["{}", "- {}", "Intro.\n{}"])
def test_a_link_written_out_keeps_a_label_after_spaces_as_text(line, label):
    # "[ > go](…)" was written out as " > go https://…": a quote all the same (four spaces: a code block).
    text = line.format(f"[{label}](https://example.com/abcdefghijklmnop)") + " x"
    for limit in (16, 24, 40):
        for platform in PLATFORMS:
            parts = _split(text, limit, platform)
            assert not [p for p in parts if _fences(p) or _blocks(p)], (limit, parts)
