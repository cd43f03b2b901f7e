"""Two styles that meet on Slack: Markdown's ``**a**__b__`` rendered as ``*a**b*``, which Slack reads as one
style holding two asterisks, and ``**a***b*`` as ``*a*_b_``, the second marker touching the first, which Slack
takes for no edge of a word. A zero-width space between them makes each style's edge a word's edge
(`platforms.formatting.slack_mrkdwn`); nested styles, which share an edge, get none."""

from __future__ import annotations

import pytest

from platforms.formatting import slack_mrkdwn

Z = "\u200b"


@pytest.mark.parametrize(("markdown", "mrkdwn"), [
    ("**a**__b__", f"*a*{Z}*b*"),
    ("**a***b*", f"*a*{Z}_b_"),
    ("*a*_b_", f"_a_{Z}_b_"),
    ("**a**~~b~~", f"*a*{Z}~b~"),
    ("~~a~~**b**", f"~a~{Z}*b*"),
    ("x **a**__b__ y", f"x *a*{Z}*b* y"),
    ("**a***b*c", f"*a*{Z}_b_{Z}c"),  # and the letter after, as before
    ("~~**a**__b__~~", f"~*a*{Z}*b*~"),  # within another style
    ("***a***___b___", f"_*a*_{Z}_*b*_"),  # two nested styles: one space, where they meet
    ("- **a**__b__", f"• *a*{Z}*b*"),
    ("## *a*_b_", f"*_a_{Z}_b_*"),
])
def test_styles_that_meet_are_kept_apart_by_a_zero_width_space(markdown, mrkdwn):
    assert slack_mrkdwn.render(markdown) == mrkdwn


@pytest.mark.parametrize(("markdown", "mrkdwn"), [
    ("***a***", "_*a*_"),  # nested: one style within the other, nothing between their markers
    ("**_a_**", "*_a_*"),
    ("**a** __b__", "*a* *b*"),
    ("**a**\n__b__", "*a*\n*b*"),
])
def test_nested_styles_and_styles_apart_get_nothing_invisible(markdown, mrkdwn):
    assert slack_mrkdwn.render(markdown) == mrkdwn
