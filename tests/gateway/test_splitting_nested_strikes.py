"""Strikethroughs nested in one: a part starting inside both reopens the outer one alone (``~~`` + ``~~`` at a
line's start is ``~~~~``, a code fence, which showed the rest of the part as nothing or as code), and the style
lookups a part's candidate cuts make read an index of the paragraph, not all its styles each time.

The lookups are checked against the plain scans they replace (kept here only, as the oracle), at every position
of random Markdown."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import gateway.markdown_structure as markdown_structure
from gateway.markdown_structure import Structure, Style
from gateway.splitting import split_text
from platforms.formatting import markdown
from platforms.formatting.markdown import definitions
from tests.gateway.test_splitting_shown_markers import _PLATFORMS, _shown

# Checked with NESTED_STRIKE_EXAMPLES=3000; the default keeps the suite quick.
EXAMPLES = int(os.environ.get("NESTED_STRIKE_EXAMPLES", "150"))


def _fences(part: str) -> list[str]:
    return [t.type for t in markdown.block_tokens(part) if t.type in ("fence", "code_block")]


def _letters(shown: str) -> str:
    return "".join(c for c in shown if c.isalnum())


def _check(text: str, limit: int, platform: str, *, tildes: bool = True) -> list[str]:
    measure, sent = _PLATFORMS[platform]
    parts = split_text(text, limit, measure)
    assert [p for p in parts if _fences(p)] == [], parts
    assert [p for p in parts if sent(p) > limit] == [], parts
    assert _letters("".join(_shown(p)[1] for p in parts)) == _letters(_shown(text)[1]), parts
    assert not tildes or "~" not in "".join(_shown(p)[1] for p in parts), parts
    return parts


@pytest.mark.parametrize("platform", ["discord", "telegram", "slack"])
def test_a_strikethrough_nested_in_one_longer_than_a_part_is_reopened_as_one(platform):
    # The part after the first reopened both: "~~~~more more…", a code fence holding the rest of the text (on
    # Discord, 2,044 characters sent as an empty code block).
    text = "~~start " + "word " * 300 + "~~inner " + "more " * 300 + "end~~ after " + "tail " * 200 + "done~~ x"
    limit = {"discord": 2000, "telegram": 1200, "slack": 1500}[platform]
    parts = _check(text, limit, platform)
    assert len(parts) > 1


@pytest.mark.parametrize("prefix", ["", "> ", "- "])
def test_every_word_a_strikethrough_nested_in_one(prefix):
    # No cut leaves only the outer one open before a letter: each part starts inside a nested one.
    text = prefix + "~~outer " + " ".join("~~ab~~" for _ in range(400)) + " more~~"
    parts = _check(text, 500, "discord")
    assert len(parts) >= 5
    assert all(p.removeprefix(prefix.strip()).lstrip().startswith("~~") for p in parts), parts


_word = st.text(alphabet="abcdefgh", min_size=1, max_size=9)
_inner = st.builds("~~{}~~".format, st.lists(_word, min_size=1, max_size=4).map(" ".join))
# A word first: "~~~~a" at a line's start is a code fence in the whole text too.
_outer = st.builds(lambda w, ws: "~~" + " ".join([w, *ws]) + "~~", _word,
                   st.lists(st.one_of(_word, _inner), max_size=12))
_line = st.builds(lambda prefix, atoms: prefix + " ".join(atoms), st.sampled_from(["", "", "> ", "- ", "1. "]),
                  st.lists(st.one_of(_word, _outer, _outer, st.builds("**{}**".format, _outer)), min_size=1,
                           max_size=4))
_text = st.lists(_line, min_size=1, max_size=4).map("\n".join)


# Shown tildes are not checked: a part ending right before a closing "~~" that a style opened in it leaves open
# (``**a ~~aaaaaaaaa~~ b**`` at 14) starts the next one with the space after it, its "~~" shown (before this change
# too). Telegram's measure is left to the cases above: rendered and parsed back, it took most of a minute here.
@pytest.mark.parametrize("platform", ["discord", "web"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_text, limit=st.integers(min_value=24, max_value=80))
@example(text="~~a ~~a~~ ~~a~~ ~~a~~ ~~a~~~~", limit=24)
def test_nested_strikethroughs_open_no_fence_and_lose_no_text(platform, text, limit):
    _check(text, limit, platform, tildes=False)


@pytest.mark.parametrize("prefix", ["", "> ", "- "])
@pytest.mark.parametrize("platform", ["discord", "web"])
def test_nested_strikethroughs_next_to_each_other_reopen_no_fence_at_any_limit(platform, prefix):
    # Every end but a few left a nested "~~" (or one's closer) next, which the cut search refused, so it cut anyway,
    # unchecked: ``~~a ~~a~~ ~~a~~~~`` + ``~~~~a~~~~`` at 24, a code fence; at 16 within a marker (``~~~a~~~~``).
    text = prefix + "~~a ~~a~~ ~~a~~ ~~a~~ ~~a~~~~"
    for limit in range(8 + len(prefix), 41):
        parts = _check(text, limit, platform)
        body = [p.removeprefix(prefix.strip()).lstrip() for p in parts]
        assert [p for p in body if p.startswith("~~~")] == [], (limit, parts)
        # A nested strikethrough's closer and the outer one's, as the text ends: at a part's end only.
        assert [p for p in parts if "~~~~" in p[:-4]] == [], (limit, parts)


# -- the index against the scans it replaces ---------------------------------------------------

def _open_at(styles: list[Style], pos: int) -> list[Style]:
    return [s for s in styles if s.open_end <= pos <= s.close_start]


def _splits_inline(styles: list[Style], atoms: list[tuple[int, int]], pos: int) -> bool:
    if any(s.open_start < pos <= s.open_end or s.close_start < pos < s.close_end for s in styles):
        return True
    return any(a < pos < b for a, b in atoms)


def _atom_at(atoms: list[tuple[int, int]], pos: int) -> tuple[int, int] | None:
    return next(((a, b) for a, b in atoms if a < pos < b), None)


_piece = st.one_of(
    _word, _word, st.sampled_from(["*", "_", "~", "~~", "**", "`", "\\*", "&amp;", "[", "]", "|"]),
    st.builds("~~{}~~".format, _word), st.builds("**{}**".format, _word), st.builds("_{}_".format, _word),
    st.builds("`{}`".format, _word), st.builds("[{}](https://x.org/{})".format, _word, _word),
    st.builds("[{} ![{}](https://x.org/i.png)](https://x.org)".format, _word, _word),
    st.builds("<https://x.org/{}>".format, _word), st.builds("https://x.org/{}".format, _word), _inner, _outer,
)
_md_line = st.builds(lambda prefix, pieces: prefix + " ".join(pieces),
                     st.sampled_from(["", "", "> ", "- ", "# ", "| "]), st.lists(_piece, min_size=1, max_size=10))
_markdown = st.lists(st.one_of(_md_line, st.sampled_from(["", "|---|---|", "a | b"])), min_size=1,
                     max_size=6).map("\n".join)


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(text=_markdown)
def test_the_lookups_answer_as_the_scans_of_every_style_did(text):
    structure = Structure(text, [], definitions(text))
    for pos in range(len(text) + 1):
        region = structure._region(pos)
        assert structure.styles_open_at(pos) == _open_at(region.styles, pos), pos
        assert structure._splits_inline(pos) == _splits_inline(region.styles, region.atoms, pos), pos
        assert structure.atom_at(pos) == _atom_at(region.atoms, pos), pos


def test_a_paragraph_of_nested_strikethroughs_is_read_a_bounded_number_of_times(monkeypatch):
    # Each lookup read all the paragraph's styles: 99 KB of them took 7 s to split for Discord. Counted, not timed.
    reads = []

    class Counted(list):
        def __iter__(self):
            reads.append(1)
            return super().__iter__()

    parse = markdown_structure._parse_region

    def counted(*args, **kwargs):
        region = parse(*args, **kwargs)
        region.styles = Counted(region.styles)
        return region

    monkeypatch.setattr(markdown_structure, "_parse_region", counted)
    paragraphs = 6
    text = "\n\n".join("~~outer " + " ".join("~~ab~~" for _ in range(500)) + " more~~" for _ in range(paragraphs))
    parts = split_text(text, 2000, _PLATFORMS["discord"][0])
    assert len(parts) > paragraphs
    assert len(reads) <= 4 * paragraphs, len(reads)


def test_a_part_that_reopens_the_outer_strikethrough_alone_closes_it():
    # From review: 70 strikethroughs open at once, whose closing markers take more than a quarter of the limit; the
    # part reopened the outer one alone ("~~word word…") but, weighing all 70 closers, closed none: "~~" shown.
    depth = 70
    text = "".join(f"~~a{i} " for i in range(depth)) + "word " * 400 + "".join(f"z{i}~~ " for i in range(depth))
    parts = split_text(text, 500, _PLATFORMS["discord"][0])
    reopened = [p for p in parts if p.startswith("~~word")]
    assert reopened
    assert [p[-40:] for p in reopened if "~" in _shown(p)[1]] == []
