"""split_text and a line whose text alone is longer than a part (a long address, a long word) right after its list
item's or quote's markers: no part is only those markers. The part before had no line break to end at, so the cut
went after the marker, and "-" was sent alone; the marker goes with the text, cut in it as any too long."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.splitting import split_text

ADDRESS = "https://example.com/" + "x" * 100

# A part of only quote and list item markers.
_ONLY_MARKERS = re.compile(r"[ \t>]*(?:(?:[-+*]|\d{1,9}[.)]?)[ \t>]*)*")


@pytest.mark.parametrize("marker", ["- ", "* ", "1. ", "> ", "- - ", "> - "])
@pytest.mark.parametrize("intro", ["", "Intro.\n\n", "Intro.\n"])
def test_a_line_of_a_long_address_keeps_its_marker(marker, intro):
    parts = split_text(f"{intro}{marker}{ADDRESS} and words\n- next\n", 60)
    assert not [p for p in parts if _ONLY_MARKERS.fullmatch(p)], parts
    assert any(f"{marker}https://example.com/x" in p for p in parts), parts


def test_a_bullet_of_a_word_longer_than_a_part_goes_with_it():
    parts = split_text("Intro.\n\n- " + "y" * 100 + " and words\n- next\n", 60)
    assert parts[:2] == ["Intro.", "- " + "y" * 58]


_word = st.text(alphabet="abcdefgh", min_size=1, max_size=9)
_marker = st.sampled_from(["- ", "* ", "1. ", "12) ", "> ", "> - ", "- - "])
_long = st.one_of(st.builds("https://x.org/{}".format, st.text(alphabet="abc", min_size=40, max_size=120)),
                  st.text(alphabet="xyz", min_size=50, max_size=120))
_line = st.one_of(st.builds(" ".join, st.lists(_word, min_size=1, max_size=6)),
                  st.builds(lambda m, t, w: f"{m}{t} {w}", _marker, _long, _word))


@settings(max_examples=150)
@given(lines=st.lists(_line, min_size=1, max_size=6), limit=st.integers(min_value=30, max_value=70))
def test_no_part_is_only_markers(lines, limit):
    for part in split_text("\n".join(lines) + "\n", limit):
        assert not _ONLY_MARKERS.fullmatch(part), part


@pytest.mark.parametrize("unit", ["- ", "> ", "1. "])
def test_a_line_of_thousands_of_markers_splits_fast(unit):
    # Each candidate cut in it is a bare marker: the line's markers were read to their end for every one of them,
    # seconds for 24 KB of "- ", minutes for a reply's worth.
    text = unit * 12_000 + "text\n"
    started = time.process_time()  # this process's CPU: a loaded machine stretches the wall clock, not this
    parts = split_text(text, 4096)
    assert time.process_time() - started < 1.0
    assert all(len(p) <= 4096 for p in parts)
    assert "".join(parts).replace(" ", "") == text.replace(" ", "").strip()
