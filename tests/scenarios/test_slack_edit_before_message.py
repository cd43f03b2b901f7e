"""Slack does not order its events: a user's edit may come before the message it edits. Over Socket Mode, a
message sent on a connection that had gone half-open is lost on it, and Slack sends it again once its ack is
overdue, on the new connection; an edit made meanwhile came on that one at once. The real slack-bolt client in
`SlackAdapter`, on the loopback `FakeSlack`, with the real `Gateway` (docs/platforms/slack.md, edits)."""

from __future__ import annotations

from gateway.testing import settled
from platforms.fakes.slack import FakeSlack
from tests.scenarios.test_slack_chat import DM, PLACEHOLDER, echo, slack_chat  # noqa: F401  (the fixture)


async def reconnected(fake: FakeSlack) -> None:
    """The half-open connection was given up and a new one opened: the next event goes on the new one."""
    await fake.wait_for(lambda: len(fake.connections) == 2 and [c.id for c in fake.open_connections] == [2])


async def test_an_edit_that_comes_before_its_message_is_what_the_turn_answers(slack_chat):  # noqa: F811
    chat = await slack_chat(script={"parent": echo})
    fake: FakeSlack = chat.fake
    fake.ack_timeout = 1.0  # Slack's is a few seconds; the message lost on the way comes again after it
    fake.stall()
    typo = (await fake.push_dm("U1", "deploy to prod"))["event"]["ts"]  # lost on the half-open connection
    await reconnected(fake)
    await fake.push_edit(DM, typo, "deploy to staging")
    await fake.wait_for(lambda: all(e.acked for e in fake.envelopes.values()), timeout=10.0)
    await chat.answered(DM)
    assert [t for t in chat.bot_texts() if t != PLACEHOLDER] == ["re: deploy to staging"]
    await settled(chat.gateway)
