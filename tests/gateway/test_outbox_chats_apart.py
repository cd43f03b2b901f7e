"""One chat or one platform in trouble holds no other up: a call that hangs, a platform down or refusing
the bot's token, each waits in its own chat (or platform), while the rest are sent at once."""

from __future__ import annotations

import asyncio
import random

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import NetworkError, Outbound, Sent, Unauthorized
from tests.gateway.test_outbox import FakeAdapter

GROUP_PACE = 3.0  # Telegram: 20 messages a minute in a group, whatever its topics


class Hanging(FakeAdapter):
    """Leaves the sends of the chats (and threads) in ``hung`` unanswered until the test sets ``release``;
    fails every call with ``error`` when set (the platform down)."""

    def __init__(self, name: str, **kw) -> None:
        super().__init__(name, **kw)
        self.hung: set[tuple[str, str | None]] = set()
        self.release = asyncio.Event()
        self.error: BaseException | None = None

    async def send(self, message: Outbound) -> Sent:
        if self.error is not None:
            self.calls.append(("send", message.chat_id, message.text, self.clock.now if self.clock else 0.0))
            self._changed.set()
            raise self.error
        if (message.chat_id, message.thread_id) in self.hung:
            self.calls.append(("send", message.chat_id, message.text, self.clock.now if self.clock else 0.0))
            self._changed.set()
            await self.release.wait()
        return await super().send(message)


@pytest.fixture
async def outbox_of(tmp_path):
    made: list[tuple[Outbox, GatewayStore]] = []

    async def outbox_of(clock: FakeClock, *adapters: FakeAdapter) -> Outbox:
        store = GatewayStore(tmp_path / "state.db", clock=clock)
        outbox = Outbox(store.outbox, {a.name: a for a in adapters}, clock=clock, rng=random.Random(3))
        made.append((outbox, store))
        await outbox.start()
        return outbox

    yield outbox_of
    for outbox, store in made:
        await outbox.close()
        store.close()


def sent_at(adapter: FakeAdapter, text: str) -> float:
    return next(at for message, _, at in adapter.sent if message.text == text)


async def test_a_send_hanging_in_one_chat_holds_neither_another_chat_nor_its_chats_other_topic_past_the_pace(
        outbox_of):
    clock = FakeClock()
    telegram = Hanging("telegram", clock=clock, send_interval=GROUP_PACE)
    telegram.hung.add(("group", "topic-1"))
    outbox = await outbox_of(clock, telegram)
    start = clock.now

    outbox.enqueue("telegram", "group", "topic-1", "stuck", kind="reply", key="a")
    await telegram.until(lambda: telegram.calls)  # on the wire, unanswered
    outbox.enqueue("telegram", "private", None, "to another chat", kind="reply", key="b")
    outbox.enqueue("telegram", "group", "topic-2", "to another topic", kind="reply", key="c")
    await telegram.until(lambda: len(telegram.sent) == 2)

    assert sent_at(telegram, "to another chat") == start  # at once
    # The topics share the group's pace (the platform counts them together), not the hung call's wait.
    assert sent_at(telegram, "to another topic") == start + GROUP_PACE
    telegram.release.set()
    await telegram.until(lambda: "stuck" in telegram.texts())


@pytest.mark.parametrize("down", [NetworkError("502 Bad Gateway"), Unauthorized("the token was revoked")],
                         ids=["outage", "token-refused"])
async def test_a_platform_down_holds_up_no_other_platforms_chat(outbox_of, down):
    clock = FakeClock(autojump=False)  # time moves only as the test says: Telegram stays down meanwhile
    telegram, slack = Hanging("telegram", clock=clock), FakeAdapter("slack", clock=clock)
    telegram.error = down
    outbox = await outbox_of(clock, telegram, slack)

    outbox.enqueue("telegram", "42", None, "held", kind="reply", key="a")
    await telegram.until(lambda: telegram.calls)
    await clock.until_sleeping()  # backing off, or held until its next probe
    start = clock.now
    outbox.enqueue("slack", "C1", None, "answered", kind="reply", key="b")
    await slack.until(lambda: slack.sent)

    assert sent_at(slack, "answered") == start  # not after a backoff or a probe of Telegram's
    assert telegram.sent == []
