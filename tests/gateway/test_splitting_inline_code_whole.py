"""split_text and inline code a part could hold whole: a line break anywhere in the part is a better cut than a
space within the code, which would come in two pieces from two messages (a command, a path copied in halves)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.splitting import split_text

CODE = "`pip install --upgrade switchboard-gateway`"


def test_a_code_span_after_a_bullet_goes_whole_to_the_next_part_when_a_line_break_came_before_it():
    # The line break fell before the window's later half, where a cut is looked for first: a space in the code was
    # taken instead, "- `pip install --upgrade`" and "`switchboard-gateway`".
    text = f"To update:\n- {CODE}\n- then restart it\n"
    assert split_text(text, 50) == ["To update:", f"- {CODE}", "- then restart it"]


def test_a_code_span_within_a_line_goes_whole_to_the_next_part_too():
    text = f"To update:\nrun {CODE} and restart it\n"
    assert split_text(text, 50) == ["To update:", f"run {CODE}", "and restart it"]


def test_a_code_span_longer_than_a_part_is_still_cut_in_a_full_part():
    code = "`" + " ".join(f"arg{i}" for i in range(30)) + "`"
    parts = split_text(f"Run this:\n- {code}\n", 60)
    assert parts[0].startswith("Run this:\n- `arg0 arg1 arg2 arg3 arg4 arg5")


_word = st.text(alphabet="abcdefgh", min_size=1, max_size=8)
_code = st.builds(lambda words: "`" + " ".join(words) + "`", st.lists(_word, min_size=2, max_size=4))
_marker = st.sampled_from(["", "- ", "1. ", "* "])
_line = st.builds(str.__add__, _marker, st.builds(" ".join, st.lists(st.one_of(_word, _code), min_size=1, max_size=9)))


@settings(max_examples=200)
@given(lines=st.lists(_line, min_size=2, max_size=8), limit=st.integers(min_value=60, max_value=120))
def test_a_code_span_on_a_line_a_part_can_hold_is_never_cut(lines, limit):
    lines = [line for line in lines if len(line) <= limit - 12]  # a part holds any line whole
    text = "\n".join(lines) + "\n"
    sent = "\n".join(split_text(text, limit))
    for code in re.findall(r"`[^`]*`", text):
        assert code in sent, (code, sent)


def test_code_no_part_could_hold_from_the_line_break_is_not_worth_a_part_ending_there():
    # The code fits the window, but not a part starting at the line break: cut there, "Intro." came alone, and the
    # code was cut all the same in the next part.
    code = "`" + " ".join("abcdefghijklmnopqrst") + "`"
    parts = split_text(f"Intro.\n{'w ' * 8}{code} done\n", 50)
    assert len(parts) == 2 and parts[0].startswith("Intro.\nw w"), parts
