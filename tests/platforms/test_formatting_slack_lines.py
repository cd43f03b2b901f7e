"""Slack's ``*bold*``, ``_italic_`` and ``~struck~`` end at their line: a style over a line break is
closed and reopened on each line, so no asterisk shows and both lines keep it."""

from __future__ import annotations

import pytest

from platforms.formatting import slack_mrkdwn


@pytest.mark.parametrize(("markdown", "mrkdwn"), [
    ("**bold\nstill bold**", "*bold*\n*still bold*"),
    ("*it\nalic*", "_it_\n_alic_"),
    ("~~a\nb~~", "~a~\n~b~"),
    ("**a _b\nc_ d**", "*a _b_*\n*_c_ d*"),
    ("**hard  \nbreak**", "*hard*\n*break*"),
    ("Setext heading\non two lines\n===", "*Setext heading*\n*on two lines*"),
    ("> **quoted\n> bold**", "> *quoted*\n> *bold*"),
    ("- **item\n  bold**", "• *item*\n  *bold*"),
    ("[**a\nb**](https://e.com)", "<https://e.com|*a b*>"),  # a link is one line already
])
def test_a_style_over_a_line_break_is_closed_and_reopened_on_each_line(markdown, mrkdwn):
    assert slack_mrkdwn.render(markdown) == mrkdwn


Z = "\u200b"


@pytest.mark.parametrize(("markdown", "mrkdwn"), [
    (r"\*not bold\*", f"{Z}*{Z}not bold{Z}*{Z}"),
    (r"\_not italic\_ and \~not struck\~", f"{Z}_{Z}not italic{Z}_{Z} and {Z}~{Z}not struck{Z}~{Z}"),
    ("**Note:**text", f"{Z}*{Z}{Z}*{Z}Note:{Z}*{Z}{Z}*{Z}text"),  # CommonMark reads no bold here
    ("**real** and \\*kept\\*", f"*real* and {Z}*{Z}kept{Z}*{Z}"),
])
def test_markers_left_as_text_that_slack_would_pair_are_kept_apart(markdown, mrkdwn):
    # Slack has no escapes: `*not bold*` went as such, and Slack showed it bold.
    assert slack_mrkdwn.render(markdown) == mrkdwn


@pytest.mark.parametrize("markdown", [
    "use snake_case_name and :white_check_mark:", "match *.py and *.txt", "cd ~/src and ~/bin", "a * b * c",
    "*args, **kwargs", r"rm \*.tmp then \*.log",
])
def test_markers_slack_cannot_pair_are_copied_as_typed(markdown):
    assert Z not in slack_mrkdwn.render(markdown)
