"""A style on part of a word on Slack: Markdown bolds ``x **b**y``, Slack's mrkdwn only a whole word, so
``*b*y`` showed its asterisks. A zero-width space between the marker and the letter makes it a word's
edge to Slack; a style already at a word's edge gets none (nothing invisible in ordinary text)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.base import Inbound, Outbound
from platforms.fakes.slack import FakeSlack
from platforms.formatting import slack_mrkdwn
from platforms.slack import SlackAdapter

Z = "\u200b"


@pytest.mark.parametrize(("markdown", "mrkdwn"), [
    ("x **b**y", f"x *b*{Z}y"),
    ("x**b** y", f"x{Z}*b* y"),
    ("foo**bar**baz", f"foo{Z}*bar*{Z}baz"),
    ("un*frigging*believable", f"un{Z}_frigging_{Z}believable"),
    ("pre~~fix~~ed", f"pre{Z}~fix~{Z}ed"),
    ("**5**0 items", f"*5*{Z}0 items"),
    ("这是**粗体**文字。", f"这是{Z}*粗体*{Z}文字。"),  # no spaces between words at all
    ("a***b***c", f"a{Z}_*b*_{Z}c"),  # only the outer marker meets the word
    ("x **one\ntwo**y", f"x *one*\n*two*{Z}y"),  # closed and reopened on each line
    ("[l**b**x](https://e.com)", f"<https://e.com|l{Z}*b*{Z}x>"),
    ("- x**b**y\n\n  > q**b**y", f"• x{Z}*b*{Z}y\n\n> q{Z}*b*{Z}y"),
    ("## Sub*title*s", f"*Sub{Z}_title_{Z}s*"),
])
def test_a_style_on_part_of_a_word_meets_it_at_a_zero_width_space(markdown, mrkdwn):
    assert slack_mrkdwn.render(markdown) == mrkdwn


@pytest.mark.parametrize(("markdown", "mrkdwn"), [
    ("a **b** c", "a *b* c"),
    ("**bold**", "*bold*"),
    ("(**b**), **c**. **d**: **e**'s **5**%", "(*b*), *c*. *d*: *e*'s *5*%"),
    ("snake_case and a*b and `x**b**y`", "snake_case and a*b and `x**b**y`"),
    ("# **T**itle", "*Title*"),  # bold within a heading is left plain: nothing to keep apart
    ("```\nx**b**y\n```", "```\nx**b**y\n```"),
])
def test_a_style_at_a_words_edge_and_text_that_is_no_style_get_nothing_invisible(markdown, mrkdwn):
    assert slack_mrkdwn.render(markdown) == mrkdwn


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


async def test_slack_is_sent_the_part_of_a_word_styled_with_its_edges(fake):
    async def sink(inbound: Inbound) -> None:
        return None

    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2)
    await adapter.start(sink)
    try:
        await adapter.send(Outbound(chat_id="C1", thread_id=None, text="Status: **green**ish, **OK**"))
        assert fake.texts("C1")[-1] == f"Status: *green*{Z}ish, *OK*"
        assert adapter.measure("a*b*c") == len(f"a{Z}_b_{Z}c")  # the splitter counts what is sent
    finally:
        await adapter.stop()
