"""split_text over small random Markdown mixing what f71cc3f9 touched: strikethroughs nested in one (under ``**``,
``*`` or ``_`` too), parenthesised bare addresses and numbered list items, at limits 8-80 on each platform's measure:
no letter lost or shown twice, every part within the limit as sent, no ``~~~~`` the text did not hold."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.splitting import split_text
from tests.gateway.test_splitting_shown_markers import _PLATFORMS, _shown

# Checked with EDGES_PROPERTY_EXAMPLES=3000; the default keeps the suite quick.
EXAMPLES = int(os.environ.get("EDGES_PROPERTY_EXAMPLES", "100"))

_word = st.text(alphabet="abcdef", min_size=1, max_size=9)
_words = st.lists(_word, min_size=1, max_size=3).map(" ".join)
_address = st.builds("https://x.org/{}".format, st.text(alphabet="pqr", min_size=1, max_size=50))
_nested = st.builds("~~{} ~~{}~~ {}~~".format, _words, _words, _words)
_atom = st.one_of(
    _word, _word, _words,
    _nested,
    st.builds("{0}{1}{0}".format, st.sampled_from(["**", "*", "_"]), _nested),
    st.builds("{0}{1} {2}{0}".format, st.sampled_from(["**", "*", "_"]), _words, _nested),
    st.builds("({})".format, _address),
    st.builds("({}).".format, _address),
    st.builds("(see {})".format, _address),
    st.builds("~~{} ~~{} ~~{}~~ {}~~ {}~~".format, _word, _word, _words, _word, _word),
    st.builds("~~{} ~~{} ({})~~ {}~~".format, _word, _word, _address, _word),
    st.builds("**{}**".format, _words),
    st.builds("_{}_".format, _words),
)
_line = st.builds(lambda n, first, rest: n + " ".join([first, *rest]),
                  st.sampled_from(["", "", "1. ", "2. ", "10. ", "123456789. ", "- ", "> ", "> 2. "]), _word,
                  st.lists(_atom, max_size=4))
_text = st.lists(_line, min_size=1, max_size=4).map(lambda lines: "\n\n".join(lines))


def _letters(shown: str) -> str:
    return "".join(c for c in shown if c.isalpha())  # an item's number may be rewritten (documented)


@pytest.mark.parametrize("platform", ["web", "telegram", "discord", "slack"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_text, limit=st.integers(min_value=8, max_value=80))
def test_nested_strikes_addresses_and_items_split_within_the_limit_losing_nothing(platform, text, limit):
    measure, sent = _PLATFORMS[platform]
    parts = split_text(text, limit, measure)
    assert [p for p in parts if sent(p) > limit] == [], parts
    assert "~~~~" in text or [p for p in parts if "~~~~" in p] == [], parts
    assert _letters("".join(_shown(p)[1] for p in parts)) == _letters(_shown(text)[1]), parts
