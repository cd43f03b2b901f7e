"""split_text over random Markdown, with each platform's measure: joined, the parts show the text the whole shows,
no letter or digit lost or shown twice (what `split_text` documents it adds aside: a link too long to carry written
out with its address, `_unlinked`); and no part shows a backslash the whole does not (Slack shows one as typed).

Its Markdown is what the cut-validity rules look at: numbers with a dot or a parenthesis (``2019. Then``, a part
starting there escapes it), lines of ``===`` or ``---`` (setext underlines, rules), styles closing right after a
long address (``__https://…__``), autolinks, quotes and bullets. Left out, as faults of their own: a strikethrough
nested in one longer than a part (cut inside both, a part reopens ``~~~~``, a code fence: documented), fence lines,
inline links and numbered items the text opens (a link that fits a part was cut in its target; an item's number
rewritten, in a quote kept as written); limits under 16, where a part in a quote given up on as plain text
(``> > `2`` + ``019. a``) opens a list, its number shown as 19."""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.splitting import _unlinked, split_text
from platforms.formatting import slack_mrkdwn
from tests.gateway.test_splitting_shown_markers import _PLATFORMS, _shown

# Checked with SPLIT_PROPERTY_EXAMPLES=3000 (each platform, --timeout=0); the default keeps the suite quick.
EXAMPLES = int(os.environ.get("SPLIT_PROPERTY_EXAMPLES", "150"))

_word = st.text(alphabet="abcdefgh", min_size=1, max_size=7)
_number = st.sampled_from(["1.", "1)", "2019.", "12)", "123456789.", "1234567890.", "7"])
_address = st.builds("https://x.org/{}".format, st.text(alphabet="abc", min_size=1, max_size=60))
_atom = st.one_of(
    _word, _word, _word, _number,
    st.sampled_from(["-", "+", ">", "#", "===", "---", "*", "_", "~", "~10"]),
    st.builds("**{} {}**".format, _word, _word),
    st.builds("_{}_".format, _word),
    st.builds("~~{} {}~~ {}".format, _word, _word, _word),
    st.builds("~~{} {}~~".format, _word, _number),
    st.builds("`{} {}`".format, _number, _word),
    _address,
    st.builds("<{}>".format, _address),
    st.builds("{0}{1}{0}".format, st.sampled_from(["__", "**", "~~", "***", "_"]), _address),
    st.builds("a ~~{} {}~~".format, _word, _address),
)
# A word first: a numbered item opened by the text is numbered on (in a quote kept as written, documented) not by
# the cut-validity rules.
_text_line = st.builds(lambda first, rest: " ".join([first, *rest]), _word, st.lists(_atom, max_size=7))
_prefix = st.sampled_from(["", "", "", "> ", "- ", "> - ", "# ", "> > "])
_line = st.one_of(
    st.builds("{}{}".format, _prefix, _text_line),
    st.sampled_from(["===", "---", "", "= = ="]),
    st.builds("{}\n===".format, _text_line),
    st.builds("{}\n---".format, _text_line),
)
_text = st.lists(_line, min_size=1, max_size=6).map("\n".join)


def _letters(shown: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "", shown)


@pytest.mark.parametrize("platform", ["web", "telegram", "discord", "slack"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_text, limit=st.integers(min_value=16, max_value=60))
def test_no_text_is_lost_or_shown_twice(platform, text, limit):
    measure, sent = _PLATFORMS[platform]
    parts = split_text(text, limit, measure)
    assert [p for p in parts if sent(p) > limit] == []
    expected = _letters(_shown(_unlinked(text, limit, measure))[1])
    assert _letters("".join(_shown(part)[1] for part in parts)) == expected, parts
    if platform == "slack":
        shown = sum(slack_mrkdwn.render(part).count("\\") for part in parts)
        assert shown <= slack_mrkdwn.render(text).count("\\"), parts


def test_a_numbered_item_before_an_address_longer_than_a_part_stays_within_the_limit():
    text = "1. y\n\n123456789. <https://x.org/" + "a" * 45 + ">"
    assert [p for p in split_text(text, 32) if len(p) > 32] == []
