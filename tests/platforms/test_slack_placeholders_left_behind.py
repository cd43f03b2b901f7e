"""A start's clean-up of the `_working…_` placeholders a killed process left (`clear_left_behind`), on the
real slack-sdk client against the loopback FakeSlack, and the gateway's record of the chats to look in."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from gateway.left_indicators import LeftIndicators
from gateway.store import GatewayStore
from platforms import slack_placeholders
from platforms.base import Outbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.slack_client import fake_slack

PLACEHOLDER = "_working…_"


class Sink:
    async def __call__(self, inbound: object) -> None:
        return None


fake = fake_slack()


async def started(fake: FakeSlack) -> SlackAdapter:
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
    await adapter.start(Sink())
    return adapter


@pytest.fixture
async def slack(fake: FakeSlack) -> AsyncIterator[SlackAdapter]:
    adapter = await started(fake)
    yield adapter
    await adapter.stop()


def texts(fake: FakeSlack, chat: str, thread: str | None = None) -> list[str]:
    return [m.get("text", "") for m in fake.messages.get((chat, thread), [])]


async def leave_a_placeholder(fake: FakeSlack, chat: str) -> None:
    """The placeholder of a process killed mid-turn: it deleted nothing on its way out."""
    earlier = await started(fake)
    try:
        await earlier.typing(chat, None)
    finally:
        earlier._progress._placeholders.clear()
        await earlier.stop()
    assert texts(fake, chat)[-1] == PLACEHOLDER


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slack_placeholders, "CLEAN_UP_WAIT", 0.001, raising=False)


async def test_slack_down_as_the_gateway_starts_is_waited_out_and_the_placeholder_deleted(
        fake: FakeSlack, slack: SlackAdapter, quick_retries: None) -> None:
    # Read once and given up on: the placeholder read "working" until some later restart.
    await slack.send(Outbound("C1", None, "the question"))
    await leave_a_placeholder(fake, "C1")
    left: list[tuple[str, str | None]] = []
    slack.bind_indicators_left(lambda chat_id, thread_id: left.append((chat_id, thread_id)))
    fake.fail_next("conversations.history", "internal_error", status=500, times=2)
    fake.fail_next("chat.delete", "internal_error", status=503)
    assert await slack.clear_left_behind("C1", None) == 1
    assert texts(fake, "C1") == ["the question"]
    assert left and set(left) == {("C1", None)}  # recorded at once: a crash meanwhile leaves it to the next start


async def test_a_clean_up_slack_cannot_serve_is_tried_a_bounded_number_of_times(
        fake: FakeSlack, slack: SlackAdapter, quick_retries: None, caplog: pytest.LogCaptureFixture) -> None:
    await leave_a_placeholder(fake, "C1")
    left: list[tuple[str, str | None]] = []
    slack.bind_indicators_left(lambda chat_id, thread_id: left.append((chat_id, thread_id)))
    fake.fail_next("conversations.history", "ratelimited", status=429, retry_after=0, times=100)
    assert await slack.clear_left_behind("C1", None) == 0
    assert len(fake.calls_to("conversations.history")) == getattr(slack_placeholders, "CLEAN_UP_TRIES", 6)
    assert set(left) == {("C1", None)}  # the next start looks again
    assert texts(fake, "C1") == [PLACEHOLDER]
    said = [r for r in caplog.records if r.levelno >= logging.WARNING and "placeholders left behind" in r.getMessage()]
    assert len(said) == 2  # as it began and as it was given up, not at every try


@pytest.mark.parametrize("error", ["channel_not_found", "not_in_channel"])
async def test_a_conversation_slack_refuses_for_good_is_forgotten_not_looked_in_at_every_start(
        fake: FakeSlack, slack: SlackAdapter, tmp_path, error: str) -> None:
    # Recorded again at each start's failed look, it was looked in (and warned of) at every start, for ever.
    store = GatewayStore(tmp_path / "state.db")
    store.indicators_left.record("slack", "C9", None)  # by a process before
    store.close()
    store = GatewayStore(tmp_path / "state.db")  # the next start's
    try:
        recorded = store.indicators_left.chats()
        indicators = LeftIndicators(store, {"slack": slack})
        slack.bind_indicators_left(lambda chat_id, thread_id: indicators.left("slack", chat_id, thread_id))
        fake.fail_next("conversations.history", error)
        await asyncio.gather(*indicators.clear(recorded, recorded=recorded))
        assert len(fake.calls_to("conversations.history")) == 1
        assert store.indicators_left.chats() == set()
    finally:
        store.close()
