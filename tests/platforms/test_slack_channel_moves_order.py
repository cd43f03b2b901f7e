"""`SlackAdapter`'s channel moves (``channel_id_changed``) coming in another order than Slack made them: one Slack
sends again after a later move of the channel, and two moves of one channel handled at once (the store slow to
take the first). The real slack-bolt and slack-sdk against the loopback `FakeSlack`, over Socket Mode."""

from __future__ import annotations

import asyncio

from platforms.base import Outbound
from platforms.fakes.slack import FakeSlack
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack, slack_on
from tests.platforms.test_slack_channel_moves import Moves

fake = fake_slack()


def moved(old: str, new: str) -> dict:
    return {"type": "channel_id_changed", "old_channel_id": old, "new_channel_id": new, "event_ts": "1.000001"}


async def test_a_move_slack_sends_again_after_a_later_one_changes_nothing(fake: FakeSlack) -> None:
    adapter, sink, moves = slack_on(fake), Sink(), Moves()
    adapter.bind_chat_moves({"G1": "C1"}, moves)  # G1 -> C1, stored before
    await adapter.start(sink)
    try:
        await fake.push_event(moved("C1", "C2"))
        await fake.wait_for(lambda: moves.stored)
        await fake.push_event(moved("G1", "C1"))  # the first move, sent again (its ack lost)
        await fake.push_event(moved("C2", "C3"))  # a marker: handled after the one sent again
        await fake.wait_for(lambda: len(moves.stored) >= 2)
        assert moves.stored == [("G1", "C2"), ("G1", "C3")]
        await adapter.send(Outbound(chat_id="G1", thread_id=None, text="there"))
        assert fake.texts("C3") == ["there"]
    finally:
        await adapter.stop()


class SlowMoves(Moves):
    """A store that takes its time over the first move (a durable write waiting on the disk)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def __call__(self, old: str, new: str) -> None:
        if not self.stored and not self.release.is_set():
            self.release.set()
            await asyncio.sleep(0.05)
        await super().__call__(old, new)


async def test_two_moves_of_a_channel_handled_at_once_both_go_on_from_the_gateways_id(fake: FakeSlack) -> None:
    adapter, sink, moves = slack_on(fake), Sink(), SlowMoves()
    adapter.bind_chat_moves({}, moves)
    await adapter.start(sink)
    try:
        await fake.push_event(moved("G1", "C1"))
        await asyncio.wait_for(moves.release.wait(), 5)
        await fake.push_event(moved("C1", "C2"))
        await fake.wait_for(lambda: len(moves.stored) == 2)
        assert sorted(moves.stored) == [("G1", "C1"), ("G1", "C2")]
        await fake.push_mention("C2", "U1", "still here?")
        await fake.wait_for(lambda: sink.inbound)
        await adapter.send(Outbound(chat_id="G1", thread_id=None, text="yes"))
        assert sink.inbound[0].chat_id == "G1" and fake.texts("C2") == ["<@UBOT> still here?", "yes"]
    finally:
        await adapter.stop()
