"""split_text where a part's end meets text glued to what it ends with: a ``)`` right after a link
(``(see [docs](…))``) that the part has no room for, and the closing markers of a style nested in one
(``**a ~~b~~ c**``), with each platform's measure: no part of only punctuation or markup, none showing a marker the
whole text did not, nothing lost.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.splitting import split_text
from tests.gateway.test_splitting_shown_markers import _PLATFORMS, _is_subsequence, _letters, _markers, _shown

_LETTERS = "cdyz019é中"  # none in the addresses
_QUOTED = "> > bbb c see [the x see x see](https://example.org//_a__/b-a_///_--___-/ab-_-b))"


def _checked(text: str, limit: int, platform: str, *, markers: bool = True) -> list[str]:
    measure, sent = _PLATFORMS[platform]
    parts = split_text(text, limit, measure)
    assert [p for p in parts if sent(p) > limit] == [], parts
    shown = [_shown(p) for p in parts]
    whole = _shown(text)
    assert _is_subsequence(_letters(whole[1]), _letters("".join(t for _, t in shown))), parts
    assert _letter_counts(whole[1]) == sum((_letter_counts(t) for _, t in shown), Counter()), parts  # none doubled
    if markers:
        assert _markers("".join(o for o, _ in shown)) - _markers(whole[0]) == Counter(), parts
    return parts


def _letter_counts(shown: str) -> Counter[str]:
    # Only the words' letters: an address is shown once written out (a piece of it where cut), else not at all.
    return Counter(c for c in shown if c in _LETTERS)


def _alone(text: str, parts: list[str], limit: int, platform: str) -> list[str]:
    """The parts of only punctuation or markup, but for what is glued to an address that the part before ends with
    and could not hold with it (cut there, a link would go to half its address), and for pieces of an address longer
    than a part (with what is glued to it), cut anyway."""
    measure = _PLATFORMS[platform][0]
    cut_anyway = [m[1] + m[2] for m in re.finditer(r"\]\((\S*?)\)(\S*)", text) if measure("> > " + m[1]) > limit]
    return [p for i, p in enumerate(parts) if not re.search(r"\w", _shown(p)[1]) and not (
        i and re.search(r"https?://\S+$", parts[i - 1]) and measure(parts[i - 1] + p.lstrip("> ")) > limit
        or any(p.lstrip("> ") in address for address in cut_anyway))]


@pytest.mark.parametrize("platform", sorted(_PLATFORMS))
def test_a_parenthesis_glued_to_a_quoted_link_goes_with_it(platform):
    # On Discord the link fit a part with its quote markers, not with its ")": that went on alone, "> > )". Its
    # address too long to carry into two parts, the link is written out, the ")" after the address.
    parts = _checked(_QUOTED, 68, platform)
    assert parts == ["> > bbb c see the x see x see", "> > https://example.org//_a__/b-a_///_--___-/ab-_-b)"]


@pytest.mark.parametrize("limit", [80, 81])
def test_a_link_that_fits_but_not_with_what_is_glued_to_it_is_cut_in_its_label(limit):
    # At 81 it fit with its quote markers, not with its ")": the ")" was a part of its own.
    text = "> > intro text here (see [the docs of the x tool and more words to read here abcdefgh](https://e.co/a))"
    assert _checked(text, limit, "web") == [
        "> > intro text here (see", "> > [the docs of the x tool and more words to read here](https://e.co/a)",
        "> > [abcdefgh](https://e.co/a))"]


def test_a_piece_of_a_quoted_address_given_up_on_keeps_its_quote_markers():
    # The address longer than a quoted part, its first piece was given up on as plain text, out of the quote.
    parts = _checked(">  (see [xbx](https://example.org/a),", 21, "telegram")
    assert all(p.startswith("> ") for p in parts), parts


@pytest.mark.parametrize("limit", [13, 14, 15])
def test_a_strikethrough_in_bold_that_no_part_can_close_both_around_is_held_whole(limit):
    # The bold's and the strikethrough's closers together take more than a quarter of the limit: the part closed
    # neither, "**~~aaaaaaaaa", and the next started at the strikethrough's closer, "**~~ b**".
    assert _checked("**a ~~aaaaaaaaa~~ b**", limit, "web") == ["**a**", "~~aaaaaaaaa~~", "**b**"]


def test_a_part_ends_before_a_nested_style_it_could_not_close():
    parts = _checked("**c ~~axxc azaa~~** cbx x", 14, "web")
    assert parts == ["**c**", "~~axxc azaa~~", "cbx x"]


# --- properties -------------------------------------------------------------------------------------------------

_word = st.text(alphabet=st.sampled_from(_LETTERS), min_size=1, max_size=8)
_words = st.lists(_word, max_size=4).map(" ".join)
# No "_": in an address's tail (``/_/_``), it may pair into an italic.
_address = st.text(alphabet=st.sampled_from("ab-/"), max_size=50).map(lambda p: f"https://example.org/{p}")
_glued = st.sampled_from([")", ").", ",", "!", "),", "'s", "**"])
_links = st.tuples(st.sampled_from(["", "> ", "> > "]), _words, st.lists(_word, min_size=1, max_size=4).map(" ".join),
                   _address, _glued, _words).map(lambda t: f"{t[0]}{t[1]} (see [{t[2]}]({t[3]}){t[4]} {t[5]}")


@st.composite
def _nested(draw, depth: int = 0) -> tuple[str, int]:
    """Words and styles nested in each other, and the markers of the most of them open at once."""
    pieces, deepest = [], 0
    for _ in range(draw(st.integers(1, 4))):
        if depth < 2 and draw(st.booleans()):
            # Words at its ends: ``~~`` right inside ``~~`` would open a code fence.
            marker = draw(st.sampled_from(["**", "*", "_", "~~"]))
            inner, inner_deepest = draw(_nested(depth + 1))
            pieces.append(f"{marker}{draw(_word)} {inner} {draw(_word)}{marker}")
            deepest = max(deepest, len(marker) + inner_deepest)
        else:
            pieces.append(draw(_word))
    return " ".join(pieces), deepest


@pytest.mark.parametrize("platform", sorted(_PLATFORMS))
@settings(max_examples=150, deadline=None)
@given(text=_links, limit=st.integers(min_value=20, max_value=90))
def test_no_part_of_glued_punctuation_alone(platform, text, limit):
    parts = _checked(text, limit, platform, markers=False)
    assert _alone(text, parts, limit, platform) == [], parts


@pytest.mark.parametrize("platform", sorted(_PLATFORMS))
@settings(max_examples=150, deadline=None)
@given(nested=_nested(), limit=st.integers(min_value=8, max_value=60))
def test_nested_styles_at_small_limits_show_no_markers_nor_parts_of_markers_only(platform, nested, limit):
    # Where the markers closing (or reopening) the styles open at a cut take more than a quarter of the limit, a part
    # carries none of them, and shows them as typed (`_carried`): only letters are checked there.
    text, deepest = nested
    carried = limit // 4 >= deepest
    parts = _checked(text, limit, platform, markers=carried)
    if carried:
        assert [p for p in parts if not re.search(r"\w", _shown(p)[1])] == [], parts
