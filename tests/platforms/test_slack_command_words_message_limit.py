"""The words the Slack adapter says to a slash command that nothing sends again (a stop's "Not taken", "may still be
answered", "could not handle"), while the workspace's ``message_limit_exceeded`` holds the posts. The hold refused
them without asking Slack, as it does a journaled answer the outbox tries again once it has passed; these are never
tried again, so the user never learnt what became of their command. Now each is tried once, hold or not. The real
slack-sdk and slack-bolt against the loopback FakeSlack (which, as Slack documents the limit, refuses posts and file
shares, not a command's ``response_url``), the hold on a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from agent.testing import FakeClock
from platforms.base import CommandSpec, Inbound, InboundSink, Outbound, RateLimited
from platforms.fakes.slack import FakeSlack
from platforms.not_recorded import NOT_HANDLED, NOT_TAKEN
from platforms.slack import SlackAdapter
from tests.platforms.slack_client import fake_slack, slack_on
from tests.sqlite_errors import full_disk

COMMANDS = [CommandSpec("new", "New session")]
DM = "DU1"  # the fake's DM channel with user U1

fake = fake_slack()


async def held(fake: FakeSlack, clock: FakeClock, sink: InboundSink, **kw: float) -> SlackAdapter:
    """An adapter started on ``sink`` whose post to another channel met the workspace's message limit: every
    channel's posts are held for a minute."""
    adapter = slack_on(fake, monotonic=clock.monotonic, **kw)
    await adapter.start(sink, COMMANDS)
    fake.exceed_message_limit(60.0, clock)
    with pytest.raises(RateLimited):
        await adapter.send(Outbound(chat_id="C2", thread_id=None, text="a post"))
    return adapter


def answers(fake: FakeSlack) -> list[tuple[str, str]]:
    return [(e["text"], e["via"]) for e in fake.ephemeral]


async def test_a_command_a_stop_leaves_unrecorded_is_told_not_taken_while_the_message_limit_holds(
        fake: FakeSlack) -> None:
    tries, clock = 0, FakeClock(autojump=False)

    async def refusing(inbound: Inbound) -> None:
        nonlocal tries
        tries += 1
        raise full_disk()

    adapter = await held(fake, clock, refusing)
    try:
        await fake.push_slash_command("/new", "U1", DM)
        await fake.wait_for(lambda: tries >= 1)
        await adapter.stop_within(0)  # within the 0.5 s before the next try: surely not recorded
    finally:
        await adapter.stop()
    assert answers(fake) == [(NOT_TAKEN.format(command="/new"), "response_url")]


async def test_a_command_failed_on_after_its_ack_is_told_so_while_the_message_limit_holds(fake: FakeSlack) -> None:
    release, clock = asyncio.Event(), FakeClock(autojump=False)

    async def failing_late(inbound: Inbound) -> None:
        await release.wait()  # past sink_timeout: acknowledged first
        raise ValueError("the command trips a bug")

    adapter = await held(fake, clock, failing_late, sink_timeout=0.2)
    try:
        await fake.push_slash_command("/new", "U1", DM)
        await fake.wait_for(lambda: any(e.type == "slash_commands" and e.acked for e in fake.envelopes.values()))
        release.set()
        await fake.wait_for(lambda: fake.ephemeral, timeout=2.0)
    finally:
        await adapter.stop()
    assert answers(fake) == [(NOT_HANDLED.format(command="/new"), "response_url")]


async def test_a_stop_word_that_meets_the_limit_holds_the_posts_after_it(fake: FakeSlack) -> None:
    # Tried all the same, it may meet the limit anew (the URL answering it, as Slack sends it): a post waits it out.
    tries, clock = 0, FakeClock(autojump=False)

    async def refusing(inbound: Inbound) -> None:
        nonlocal tries
        tries += 1
        raise full_disk()

    adapter = slack_on(fake, monotonic=clock.monotonic)
    await adapter.start(refusing, COMMANDS)
    try:
        fake.fail_next("response_url", "message_limit_exceeded", status=429)
        await fake.push_slash_command("/new", "U1", DM)
        await fake.wait_for(lambda: tries >= 1)
        await adapter.stop_within(0)
        with pytest.raises(RateLimited) as refused:
            await adapter.send(Outbound(chat_id="C2", thread_id=None, text="a post"))
    finally:
        await adapter.stop()
    assert answers(fake) == [] and len(fake.calls_to("response_url")) == 1
    assert not refused.value.called and fake.calls_to("chat.postMessage") == []
