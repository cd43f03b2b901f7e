"""split_text and a line's markers: a part never ends with a list item's (or a quote's) bare marker whose
text went to the next part, when it could have ended at the line break before it."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.splitting import split_text
from tests.platforms.test_formatting_blocks import telegram_measure

# A part's last line that holds only quote and list item markers.
_BARE_MARKERS = re.compile(r"\n[ \t>]*(?:(?:[-+*]|\d{1,9}[.)])(?:[ \t]+[ \t>]*|\Z))+\Z|\n[ \t]*>[ \t>]*\Z")


def test_a_bullet_whose_link_does_not_fit_goes_to_the_next_part_with_it():
    # The latest cut before the link (never cut) was the space after "-": the first part ended with an
    # empty bullet, and the link, in the second, was out of the list.
    text = "word word word *it*\n- [l](https://x.org/a)\n"
    assert split_text(text, 40, telegram_measure) == ["word word word *it*", "- [l](https://x.org/a)"]


@pytest.mark.parametrize("intro, line", [
    ("intro text goes her", "- [label](https://example.org/xyzw)"),
    ("intro text goes her", "1. [label](https://example.org/xyzw)"),
    ("intro text goes h", "- - [label](https://example.org/xyzw)"),
    ("intro text goes he", "> [label](https://example.org/xyzw)"),
    ("intro text goes h", "> - [label](https://example.org/xyzw)"),
    ("intro text goes her", "* averyveryveryverylongwordthatgoeson"),
])
def test_a_line_whose_text_does_not_fit_goes_to_the_next_part_with_its_markers(intro, line):
    # The line break falls just before the window's later half, where a cut is looked for first: the space
    # after the markers was taken instead.
    assert split_text(f"{intro}\n{line}\n", 40) == [intro, line]


def test_an_empty_item_of_the_text_may_end_a_part():
    # The text shows it empty too: only the next item's bare marker gives way.
    text = "intro words here\n-\n- [label](https://x.org/abcdefghij)\n"
    assert split_text(text, 40) == ["intro words here\n-", "- [label](https://x.org/abcdefghij)"]


_word = st.text(alphabet="abcdefgh", min_size=1, max_size=9)
_marker = st.sampled_from(["- ", "* ", "1. ", "12) ", "> ", "> - ", "- - ", "  - "])
_content = st.one_of(
    st.builds("[{}](https://x.org/{})".format, _word, _word),
    st.builds(" ".join, st.lists(_word, min_size=1, max_size=4)),
    st.text(alphabet="abcdefgh", min_size=10, max_size=30),
)
_line = st.one_of(st.builds(" ".join, st.lists(_word, min_size=1, max_size=6)),
                  st.builds(str.__add__, _marker, _content))


@settings(max_examples=150)
@given(lines=st.lists(_line, min_size=2, max_size=8), limit=st.integers(min_value=45, max_value=120))
def test_no_part_ends_with_a_bare_marker_the_text_goes_on_after(lines, limit):
    for part in split_text("\n".join(lines) + "\n", limit):
        assert not _BARE_MARKERS.search(part), part
