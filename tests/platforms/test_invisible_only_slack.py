"""A Slack message whose text shows nothing, only invisible characters (zero-width spaces, word joiners: what
`platforms.formatting.blank.is_blank` calls blank): never handed to the gateway alone, where it cost a turn of the
model answering what no one could read. A file with such a comment is the file; the bot's mention with it is the
mention alone; an edit to it is not handed over, as an edit that leaves a message no longer for the bot is not. The
real slack-bolt / slack-sdk clients against `FakeSlack` over Socket Mode."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_addressed import addressed
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack, slack_on

fake = fake_slack()

INVISIBLE = ["\u200b", "\u200b\u2060", "\ufeff", " \u200d ", "\ufe0f\u2060\n\u200b"]


class Edits:
    """Stands in for the gateway's `MessageEdits.edited`: records each edit handed over."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def __call__(self, platform: str, chat_id: str, thread_id: str | None, message_id: str, text: str) -> bool:
        self.texts.append(text)
        return True


@pytest.fixture
async def slack(fake: FakeSlack) -> AsyncIterator[tuple[Sink, Edits]]:
    adapter: SlackAdapter = slack_on(fake)
    sink, edits = Sink(), Edits()
    adapter.bind_edits(edits)
    await adapter.start(sink)
    yield sink, edits
    await adapter.stop()


async def texts_before(fake: FakeSlack, sink: Sink) -> list[str]:
    """The texts handed over, once a DM written after those pushed so far is: what came before it came first."""
    await fake.push_dm("U1", "the last one")
    await fake.wait_for(lambda: sink.inbound and sink.inbound[-1].text == "the last one")
    return [inbound.text for inbound in sink.inbound[:-1]]


@pytest.mark.parametrize("text", INVISIBLE)
async def test_a_dm_or_a_thread_reply_of_invisible_characters_alone_is_not_handed_over(fake, slack, text) -> None:
    sink, _ = slack
    await fake.push_mention("C1", "U1", "hello")  # the bot is in this thread from now on: replies need no mention
    await fake.wait_for(lambda: sink.inbound)
    thread = sink.inbound[0].thread_id
    await fake.push_dm("U1", text)
    await fake.push_message("C1", "U1", text, thread_ts=thread)
    assert await texts_before(fake, sink) == ["hello"]


async def test_the_bots_mention_with_invisible_characters_alone_is_the_mention_alone(fake, slack) -> None:
    sink, _ = slack
    await fake.push_mention("C1", "U1", "")
    await fake.push_mention("C1", "U1", "\u200b\u2060")
    assert await texts_before(fake, sink) == ["", ""]


async def test_a_file_with_a_comment_of_invisible_characters_alone_is_the_file(fake, slack) -> None:
    sink, _ = slack
    await fake.push_file("DU1", "U1", b"a,b\n1,2\n", "data.csv", mimetype="text/csv", text="\u200b")
    await fake.wait_for(lambda: sink.inbound)
    (inbound,) = sink.inbound
    assert inbound.text == "" and [a.name for a in inbound.attachments] == ["data.csv"]


async def test_an_edit_to_invisible_characters_alone_is_not_handed_over(fake, slack) -> None:
    sink, edits = slack
    ts = (await fake.push_dm("U1", "deploy to prod"))["event"]["ts"]
    await fake.wait_for(lambda: sink.inbound)
    await fake.push_edit("DU1", ts, "\u200b\u2060")
    await fake.push_edit("DU1", ts, "deploy to staging")
    await fake.wait_for(lambda: edits.texts)
    assert edits.texts == ["deploy to staging"]


@pytest.mark.parametrize("text", ["  ", "\u00a0", "\u3000", "\n\t"])
async def test_a_dm_or_a_thread_reply_of_spaces_alone_is_not_handed_over_either(fake, slack, text) -> None:
    """No-break and ideographic spaces, which Slack sends as typed: `str.strip` took them away before the check,
    and the message went as an empty one, a turn answering nothing, where a zero-width space was passed over."""
    sink, _ = slack
    await fake.push_mention("C1", "U1", "hello")
    await fake.wait_for(lambda: sink.inbound)
    thread = sink.inbound[0].thread_id
    await fake.push_dm("U1", text)
    await fake.push_message("C1", "U1", text, thread_ts=thread)
    assert await texts_before(fake, sink) == ["hello"]


async def test_a_message_of_blocks_with_invisible_text_is_read_from_its_blocks(fake, slack) -> None:
    """An app posting for the user may give its blocks a fallback ``text`` that shows nothing (a zero-width space):
    the blocks are what Slack shows, and the message was passed over, lost."""
    sink, _ = slack
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "Deploy *prod* now"}}]
    await fake.push_event({"type": "message", "channel": fake.dm_channel("U1"), "user": "U1", "text": "\u200b",
                           "blocks": blocks, "ts": "1700000000.000100", "event_ts": "1700000000.000100",
                           "channel_type": "im", "team": fake.team_id})
    assert await texts_before(fake, sink) == ["Deploy *prod* now"]


async def test_a_message_of_blocks_alone_that_show_nothing_is_not_handed_over(fake, slack) -> None:
    """Blocks alone (no ``text``) are read from them: of a zero-width space alone, that was its turn of the model."""
    sink, _ = slack
    blocks = [{"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [
        {"type": "text", "text": "\u200b\u2060"}]}]}]
    await fake.push_event({"type": "message", "channel": fake.dm_channel("U1"), "user": "U1", "text": "",
                           "blocks": blocks, "ts": "1700000000.000100", "event_ts": "1700000000.000100",
                           "channel_type": "im", "team": fake.team_id})
    assert await texts_before(fake, sink) == []


@pytest.mark.parametrize("text", ["!stop\u200b", "\u2060!stop", "!STOP\ufeff please"])
def test_a_text_command_with_invisible_characters_glued_on_in_peoples_thread_is_still_taken(text) -> None:
    """The gateway reads it as ``!stop`` (`gateway.commands.parse`); in a thread the bot is not in, it was not taken."""
    event = {"channel": "C1", "ts": "2.0", "thread_ts": "1.0", "user": "U1", "text": text}
    taken = addressed(event, "UBOT", re.compile("<@UBOT>"), threads=set(), text_commands={"!stop"})
    assert taken is not None and taken.thread == "1.0"
