"""Handing a live Slack message over to the gateway until it is recorded (`platforms.slack_handover`):
the real slack-bolt / slack-sdk clients on the loopback FakeSlack, a recording sink in the gateway's
place (`tests.platforms.test_slack_catchup.Gateway`)."""

from __future__ import annotations

import logging

import pytest

from platforms.base import Inbound
from platforms.fakes.slack import FakeSlack
from tests.platforms.test_slack_catchup import DM, Gateway, down
from tests.sqlite_errors import full_disk


class FullDisk(Gateway):
    """A gateway whose store refuses every message for want of room until ``room()`` says there is."""

    def __init__(self, room) -> None:
        super().__init__()
        self.room, self.refusals = room, 0

    async def sink(self, inbound: Inbound) -> None:
        if not self.room():
            self.refusals += 1
            raise full_disk()
        await super().sink(inbound)


async def test_a_message_the_store_refuses_until_slack_gives_up_on_it_is_handed_over_again_meanwhile(
        caplog: pytest.LogCaptureFixture) -> None:
    # Refused before the ack, it was left to Slack to send again; Slack gives up after three retries
    # (over about five minutes), and then it waited for the next start's catch-up, though the store had
    # room again since: answered days later perhaps, or never (past the day a catch-up reads back).
    async with FakeSlack(ack_timeout=0.2) as fake:
        gateway = FullDisk(room=lambda: fake.given_up)
        caplog.set_level(logging.INFO, logger="platforms.slack")
        adapter = await gateway.start(fake)
        try:
            hello = (await fake.push_dm("U1", "hello"))["event"]
            [envelope] = await fake.wait_for(lambda: fake.given_up)
            await fake.wait_for(lambda: gateway.last_seen.get((DM, None)) == hello["ts"])
        finally:
            await down(fake, adapter)
    assert gateway.texts() == ["hello"] and len(envelope.deliveries) == 4 and not envelope.acked
    assert not fake.calls_to("conversations.history")  # no read of Slack for it: the adapter has the event
    hello_id = f"{DM}:{hello['ts']}"
    assert f"slack: message {hello_id} was not recorded (OperationalError: database or disk is full) while" \
           " Slack may still send it again; handing it over again in 0.5 s, and until it is" in caplog.messages
    assert f"slack: message {hello_id} is recorded" in caplog.messages


async def test_a_message_slack_sends_again_and_is_taken_is_not_left_behind_by_a_stop() -> None:
    # Slack's own delivery took it: the adapter's handing over again, cut short by the stop, must not
    # count it as not taken (the record moved back just before it, for the next start to read again).
    async with FakeSlack(ack_timeout=0.2) as fake:
        gateway = FullDisk(room=lambda: gateway.refusals == 1)
        adapter = await gateway.start(fake)
        try:
            hello = (await fake.push_dm("U1", "hello"))["event"]
            await fake.wait_for(lambda: gateway.last_seen.get((DM, None)) == hello["ts"])
        finally:
            await down(fake, adapter)
        assert gateway.taken() == ["hello"] and gateway.last_seen[(DM, None)] == hello["ts"]
