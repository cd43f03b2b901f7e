"""Markdown on Slack: the adapter renders mrkdwn and slack-sdk posts it to FakeSlack, which
records what was sent."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.base import Inbound, NotFound, Outbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def slack(fake: FakeSlack) -> AsyncIterator[SlackAdapter]:
    async def sink(inbound: Inbound) -> None:
        return None

    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2)
    await adapter.start(sink)
    yield adapter
    await adapter.stop()


async def sent(fake: FakeSlack, slack: SlackAdapter, markdown: str) -> str:
    await slack.send(Outbound(chat_id="C1", thread_id=None, text=markdown))
    return fake.texts("C1")[-1]


@pytest.mark.parametrize(
    ("markdown", "mrkdwn"),
    [
        ("a **bold** b", "a *bold* b"),
        ("an *italic* and _this_", "an _italic_ and _this_"),
        ("~~gone~~ now", "~gone~ now"),
        ("run `ls -l` here", "run `ls -l` here"),
        # Slack's inline code cannot hold a backtick: such a span is preformatted text, which can.
        ("run ``a`b`` and `` `x` `` or ````y```z````", "run ```a`b``` and ```\u200b`x`\u200b``` or ```y`\u200b``z```"),
        ("see [the docs](https://example.com/?a=1&b=2)", "see <https://example.com/?a=1&amp;b=2|the docs>"),
        ("bare <https://example.com>", "bare <https://example.com>"),
        ("see https://example.com/_a_/b?c=1&d=*2*/ and *this*",
         "see <https://example.com/_a_/b?c=1&amp;d=*2*/> and _this_"),
        ("**https://example.com/a_b**.", "*<https://example.com/a_b>*."),
        ("`https://example.com/_a_`", "`https://example.com/_a_`"),
        ("_Source: https://example.com/a_ and more", "_Source: <https://example.com/a>_ and more"),
        ("> quoted\n> **words**", "> quoted\n> *words*"),
        ("# Title\n\nbody", "*Title*\n\nbody"),
        # Backticks CommonMark leaves as text: Slack took them for a fence and paired them with the block's.
        ("Type ``` and a language:\n\n```python\nprint(1)\n```",
         "Type `\u200b`\u200b` and a language:\n\n```\nprint(1)\n```"),
        # A heading is bold already: Slack has no bold within bold, and showed its asterisks as typed.
        ("### **Summary**\n\n## The **new** _plan_", "*Summary*\n\n*The new _plan_*"),
        ("- one\n- two\n\n1. first\n2. second", "• one\n• two\n\n1. first\n2. second"),
        ("```python\nif a < b:\n    pass\n```", "```\nif a &lt; b:\n    pass\n```"),
        ("````\n```python\nprint(1)\n```\n````", "```\n`\u200b``python\nprint(1)\n`\u200b``\n```"),  # ``` would end it
        ("| a | b |\n|---|---|\n| 1 | 22 |", "```\na | b\n--+---\n1 | 22\n```"),
        ("| a | b |\n|---|---|\n| 1 | [x](https://e.com/?q=<y>) |",
         "```\na | b\n--+-----------------------------\n1 | x (https://e.com/?q=%3Cy%3E)\n```"),
        ("<https://ru.wikipedia.org/wiki/Москва> <me@example.com>",
         "<https://ru.wikipedia.org/wiki/%D0%9C%D0%BE%D1%81%D0%BA%D0%B2%D0%B0|https://ru.wikipedia.org/wiki/Москва> "
         "<mailto:me@example.com|me@example.com>"),
        ("1 < 2 & <@U123> stays text", "1 &lt; 2 &amp; &lt;@U123&gt; stays text"),
    ],
)
async def test_each_element_becomes_mrkdwn(fake: FakeSlack, slack: SlackAdapter, markdown: str, mrkdwn: str) -> None:
    assert await sent(fake, slack, markdown) == mrkdwn


async def test_edits_are_rendered_too(fake: FakeSlack, slack: SlackAdapter) -> None:
    message = await slack.send(Outbound(chat_id="C1", thread_id=None, text="⏳ working"))
    await slack.edit("C1", None, message.message_id, "✓ **done**")
    assert fake.calls_to("chat.update")[-1].params["text"] == "✓ *done*"


async def test_a_formatting_error_falls_back_to_plain_text_exactly_once(fake: FakeSlack, slack: SlackAdapter) -> None:
    fake.fail_next("chat.postMessage", "invalid_blocks")
    sent_ = await slack.send(Outbound(chat_id="C1", thread_id=None, text="the **answer**"))
    first, second = fake.calls_to("chat.postMessage")
    assert first.params["text"] == "the *answer*" and "mrkdwn" not in first.params
    assert (second.params["text"], second.params["mrkdwn"]) == ("the **answer**", False)
    assert fake.texts("C1") == ["the **answer**"] and sent_.message_id == fake.messages[("C1", None)][0]["ts"]


async def test_only_a_formatting_error_triggers_the_fallback(fake: FakeSlack, slack: SlackAdapter) -> None:
    fake.fail_next("chat.postMessage", "channel_not_found")
    with pytest.raises(NotFound):
        await slack.send(Outbound(chat_id="C1", thread_id=None, text="the **answer**"))
    assert len(fake.calls_to("chat.postMessage")) == 1


async def test_the_plain_fallback_is_escaped_so_it_cannot_ping_a_channel(fake: FakeSlack, slack: SlackAdapter) -> None:
    fake.fail_next("chat.postMessage", "invalid_blocks")
    await slack.send(Outbound(chat_id="C1", thread_id=None, text="quoted: <!channel> **now**"))
    fallback = fake.calls_to("chat.postMessage")[-1].params
    assert (fallback["text"], fallback["mrkdwn"]) == ("quoted: &lt;!channel&gt; **now**", False)


def test_measure_counts_the_mrkdwn_or_the_markdown(slack: SlackAdapter) -> None:
    assert slack.measure("a & b") == len("a &amp; b")
    assert slack.measure("**bold**") == len("**bold**")  # the plain fallback must fit too
    assert slack.measure("**<!here>**") == len("**&lt;!here&gt;**")
