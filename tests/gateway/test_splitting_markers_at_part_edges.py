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
from tests.gateway.test_splitting_shown_markers import _PLATFORMS, _shown, _split

ADDRESS = "https://example.com/" + "x" * 100
PLATFORMS = ["web", "telegram", "discord", "slack"]

# A part of only quote, list item and style markers.
_ONLY_MARKERS = re.compile(r"[ \t>]*(?:(?:[-+*]|\d{1,9}[.)])[ \t>]*)*[*_~`]*")


def _fences(part: str) -> list[str]:
    return [t.type for t in markdown.block_tokens(part) if t.type in ("fence", "code_block")]


def _blocks(part: str) -> list[str]:
    return [t.type for t in markdown.block_tokens(part) if t.type in ("blockquote_open", "heading_open")]


def _rules(part: str) -> list[str]:
    return [t.type for t in markdown.block_tokens(part) if t.type == "hr"]


def _lists(part: str) -> list[str]:
    return [t.type for t in markdown.block_tokens(part) if t.type in ("ordered_list_open", "bullet_list_open")]


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
_style = st.sampled_from(["**", "_", "~~", "***", "*", "__"])
_long = st.one_of(st.builds("https://x.org/{}".format, st.text(alphabet="abc", min_size=40, max_size=120)),
                  st.builds("<https://x.org/{}>".format, st.text(alphabet="abc", min_size=40, max_size=120)))
_line = st.one_of(st.builds(" ".join, st.lists(_word, min_size=1, max_size=6)),
                  st.builds(lambda m, s, t, w: f"{m}{s}{t}{s} {w}", _marker, _style, _long, _word),
                  st.builds(lambda w, s, t: f"{w} {s}{t}{s}", _word, _style, _long))


@pytest.mark.parametrize("platform", PLATFORMS)
@settings(max_examples=150, deadline=None)
@given(lines=st.lists(_line, min_size=1, max_size=5), limit=st.integers(min_value=30, max_value=70))
def test_no_part_is_only_markers_of_a_line_or_a_style(platform, lines, limit):
    for part in split_text("\n".join(lines) + "\n", limit, _PLATFORMS[platform][0]):
        assert not _ONLY_MARKERS.fullmatch(part), part


@pytest.mark.parametrize("style", ["~~", "__", "**", "***"])
@pytest.mark.parametrize("address", ["https://x.org/" + "a" * 47, "<https://x.org/" + "a" * 47 + ">"])
def test_a_closing_marker_after_an_address_longer_than_a_part_is_never_cut_in_two(style, address):
    # The part holding the address ended within the closing "~~" (``a ~~<https://x.org/a…>~`` at 66), the next
    # part the other "~" alone; or right before it, showing its opening "~~" as typed and dropping the closing one.
    text = f"a {style}{address}{style}\n"
    for limit in range(30, len(text)):
        parts = split_text(text, limit)
        assert [p for p in parts if _ONLY_MARKERS.fullmatch(p) or style + "h" in _shown(p)[0]
                or style + "<" in _shown(p)[0]] == [], (limit, parts)


@pytest.mark.parametrize("line", ["{}", "a ~~{}~~ b", "x ***{}*** y"])
def test_an_address_in_angle_brackets_never_leaves_its_closing_bracket_alone(line):
    # Cut right before its ">", the next part was "\>" (a quote of nothing unescaped), or "~~>~~", "***>***".
    text = line.format("<https://x.org/" + "a" * 47 + ">")
    for limit in range(30, len(text)):
        parts = split_text(text, limit)
        assert [p for p in parts if p.strip("\\*~ by").startswith(">")] == [], (limit, parts)


@pytest.mark.parametrize("text", ["para one words\n=== and more words here",
                                  "para one words\n--- and more words here"])
def test_a_line_of_equals_or_dashes_going_on_ends_no_part(text):
    # Cut after "===", the part "words\n===" read as a heading, the text a paragraph.
    for limit in range(8, len(text)):
        parts = split_text(text, limit)
        assert [p for p in parts if _blocks(p) or _rules(p)] == [], (limit, parts)


def test_a_setext_heading_is_not_cut_from_its_underline():
    # Cut before "===", the title was a paragraph and the next part showed "===" as typed.
    text = "Some intro words\n\npara one words\n===\nmore text after it"
    for limit in range(17, len(text)):
        parts = split_text(text, limit)
        assert [p for p in parts if p.startswith("===")] == [], (limit, parts)


@pytest.mark.parametrize("text", ["Intro words here and see 2019. Then it went on and on for a while longer",
                                  "Intro words here and see 1) one thing, then another"])
def test_a_part_starting_at_a_number_and_a_dot_opens_no_numbered_list(text):
    # "2019. Then" at a part's start was a list item numbered 2019; escaped, its number shows with its dot.
    for limit in range(8, len(text)):
        for platform in PLATFORMS:
            parts = _split(text, limit, platform)
            assert [p for p in parts if _lists(p)] == [], (limit, parts)
            assert "\\" not in "".join(_shown(p)[0] for p in parts)


@pytest.mark.parametrize("label", ["1) one", "2. two"])
def test_a_link_written_out_keeps_a_numbered_label_as_text(label):
    text = f"[{label}](https://example.com/{'a' * 60}) x"
    for limit in (20, 30, 40):
        for platform in PLATFORMS:
            parts = _split(text, limit, platform)
            assert not [p for p in parts if _lists(p)], (limit, parts)
            assert _shown(parts[0])[0].startswith(label), parts


def test_a_strikethrough_nested_in_one_is_not_reopened_before_its_opening_marker():
    # Cut before the inner "~~aa~~", the next part reopened the outer one: "~~~~aa~~~~", a code fence.
    text = "~~a ~~aa~~~~ end"
    for limit in range(8, len(text)):
        assert not [p for p in split_text(text, limit) if _fences(p)], limit


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


@pytest.mark.parametrize("text", ["> ~~aaa bbb ccc ddd\n> ~~b~~ c~~ ddd", "> > ~~aaa bbb ccc\n> > ~~bb~~ c~~ ddd"])
def test_a_strikethrough_nested_in_one_on_a_quoted_line_is_not_reopened_before_its_opening_marker(text):
    # Cut at the line break, the next part repeated the line's ">" and reopened the outer strikethrough: "> ~~~~b", a
    # code fence in the quote. (A part holding less than the nested one and what follows it up to the outer one's close
    # is cut inside both, and reopens them so all the same.)
    for limit in range(22, len(text)):
        assert not [p for p in split_text(text, limit) if _fences(p)], (limit, split_text(text, limit))
