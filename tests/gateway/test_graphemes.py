"""gateway.graphemes: a cut is told whole or not exactly as matching the whole text with \\X tells it, and
in time independent of how long a run of flags is."""

from __future__ import annotations

import time

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.graphemes import is_boundary
from gateway.splitting import split_text
from platforms.base import utf16_length


def _boundaries(text: str) -> set[int]:
    return {m.end() for m in regex.finditer(r"\X", text)} | {0}


_piece = st.one_of(
    st.sampled_from(["a", " ", "\n", "中", "e\u0301", "\u0301", "\u200d", "👩", "🏽", "👨\u200d👩\u200d👧",
                     "\u1100\u1161\u11a8", "\u0915\u094d\u0937", "\u0600", "🇫", "🇷", "🇫🇷"]),
    # Runs of regional indicators longer than the stretch looked back, odd or even, flags cut in two.
    st.integers(min_value=120, max_value=400).map(lambda n: "🇫🇷" * n + "🇪" * (n % 2)),
)


@settings(max_examples=100, deadline=None)
@given(text=st.lists(_piece, max_size=40).map("".join))
def test_every_position_as_the_whole_text_clusters_it(text):
    whole = _boundaries(text)
    assert [i for i in range(len(text) + 1) if is_boundary(text, i)] == sorted(whole | {len(text)})


def test_a_cut_in_a_long_run_of_flags_pairs_them_from_the_run_start():
    text = "x" + "🇪" + "🇫🇷" * 300 + "!"
    assert not is_boundary(text, 2) and is_boundary(text, 3) and not is_boundary(text, 4)
    assert not is_boundary(text, 400) and is_boundary(text, 401)


def test_a_reply_of_flags_splits_fast_and_between_flags():
    text = "🇫🇷" * 50_000
    started = time.process_time()  # CPU: each cut had regex walk back over the whole run, at every match
    parts = split_text(text, 4096, utf16_length)
    assert time.process_time() - started < 1.0
    assert all(utf16_length(p) <= 4096 for p in parts)
    assert "".join(parts) == text and all(len(p) % 2 == 0 for p in parts)
