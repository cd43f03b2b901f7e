"""The bot removed from a Slack channel (or the channel archived) while a thread's work runs there: the real
`Gateway` with a `SlackAdapter` (real slack-bolt and slack-sdk) on the loopback `FakeSlack` over Socket Mode. The
running turn and its subagents are stopped as /stop stops them, the messages waiting for their turns dropped,
without a word in the channel (which takes none) and with one log line naming it; added back, it is answered as
always. When Slack's event never came, the first write it refuses there does the same."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from gateway.testing import settled
from platforms.fakes.slack import FakeSlack
from tests.gateway.chat_lost import LOST, hanging_gateways, lines
from tests.hanging_children import children_hanging
from tests.platforms.slack_client import bot_posts, slack_on


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


gateways = hanging_gateways("slack", slack_on, lambda fake: fake.open_connections)


def posted_after(fake: FakeSlack, calls: int) -> list[str]:
    return [str(c.params.get("text")) for c in fake.calls_to("chat.postMessage")[calls:]]


async def test_the_bot_removed_from_a_channel_stops_its_threads_work_without_a_word(fake, gateways, caplog):
    caplog.set_level(logging.INFO)
    # Inline (interim messages off): the turn runs as long as its children; queued: a second message waits.
    gateway, model = await gateways(interim_assistant_messages=False, busy_input_mode="queue")
    thread = (await fake.push_mention("C1", "U1", "please delegate this"))["event"]["ts"]
    await children_hanging(model)
    (session,) = gateway.sessions
    working = session.session_id
    await fake.push_message("C1", "U2", "and one more thing", thread_ts=thread)  # the bot's thread: no mention
    await fake.wait_for(lambda: session.queue)
    calls = len(fake.calls_to("chat.postMessage"))
    await fake.remove_bot("C1")  # member_left_channel, then channel_left: one stop
    children = gateway.host.children
    await fake.wait_for(lambda: session.running is None and not children.children(working))
    await settled(gateway)
    assert [c.state.value for c in children.recent(working)] == ["INTERRUPTED", "INTERRUPTED"]
    assert not session.queue  # dropped: its answer would be refused, after a model call
    assert posted_after(fake, calls) == []  # no "Stopped" into a channel that takes nothing
    assert lines(caplog) == [f"slack chat C1 {LOST} (the bot was removed from the channel): stopped the running turn"
                             " and 2 subagents; dropped 1 waiting message"]

    await fake.add_bot("C1")  # added back: answered as always
    again = (await fake.push_mention("C1", "U1", "hello again"))["event"]["ts"]
    await fake.wait_for(lambda: "all done" in fake.texts("C1", again))
    await settled(gateway)
    assert len(lines(caplog)) == 1


async def test_an_archive_whose_event_never_came_stops_the_work_at_the_first_refusal(fake, gateways, caplog):
    caplog.set_level(logging.INFO)
    gateway, model = await gateways(interim_assistant_messages=True)  # background: the children outlive the turn
    thread = (await fake.push_mention("C1", "U1", "please delegate this"))["event"]["ts"]
    await children_hanging(model)
    answered = ["I started the subagents."]  # and its placeholder deleted: the bot has nothing more to write there
    await fake.wait_for(lambda: [m["text"] for m in bot_posts(fake, "C1", thread)] == answered)
    (session,) = gateway.sessions
    working = session.session_id
    await fake.archive("C1", event=False)  # the app not subscribed to channel_archive, say
    # Written just before the archive: its turn's placeholder and answer are refused, and the work stops at the first.
    await fake.push_message("C1", "U1", "are you still there?", thread_ts=thread)
    children = gateway.host.children
    await fake.wait_for(lambda: not children.children(working))
    await settled(gateway)
    assert [c.state.value for c in children.recent(working)] == ["INTERRUPTED", "INTERRUPTED"]
    assert [m["text"] for m in bot_posts(fake, "C1", thread)] == answered
    # The new turn is stopped too, unless its answer (refused in its turn) was on its way already.
    (line,) = lines(caplog)
    assert line in (f"slack chat C1 {LOST} (the channel is archived): stopped {what}2 subagents"
                    for what in ("", "the running turn and "))
