"""The real slack-sdk and slack-bolt against `FakeSlack`, for tests: the fake as a fixture, an adapter
connected to it over Socket Mode as another (also one whose waits run on a fake clock), adapters started one per
simulated process, and what the bot posted."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from agent.testing import FakeClock
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.sink import Sink


def fake_slack() -> Any:
    """A ``fake`` fixture for a test module (``fake = fake_slack()``): a `FakeSlack` started for the test, which
    redelivers no event unless a test asks it to (an event unacked after 2 s)."""

    @pytest.fixture
    async def fake() -> AsyncIterator[FakeSlack]:
        async with FakeSlack(ack_timeout=2.0) as fake:
            yield fake

    return fake


def slack_on(fake: FakeSlack, **kw: Any) -> SlackAdapter:
    """An adapter in Socket Mode pointed at ``fake``, pinging every 0.2 s (a dead connection is seen at once)."""
    return SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                        ping_interval=0.2, **kw)


def running_slack() -> Any:
    """A ``slack`` fixture for a test module (``slack = running_slack()``): `slack_on` the module's ``fake``,
    started with a `Sink`, stopped after the test."""

    @pytest.fixture
    async def slack(fake: FakeSlack) -> AsyncIterator[SlackAdapter]:
        adapter = slack_on(fake)
        await adapter.start(Sink())
        yield adapter
        await adapter.stop()

    return slack


def clocked_slack() -> tuple[Any, Any]:
    """``clock`` and ``clocked`` fixtures for a test module (``clock, clocked = clocked_slack()``): a `FakeClock`
    only the test moves, and `slack_on` the module's ``fake`` measuring its waits on it, started with a `Sink`,
    stopped after the test."""

    @pytest.fixture
    def clock() -> FakeClock:
        return FakeClock(autojump=False)

    @pytest.fixture
    async def clocked(fake: FakeSlack, clock: FakeClock) -> AsyncIterator[SlackAdapter]:
        adapter = slack_on(fake, monotonic=clock.monotonic)
        await adapter.start(Sink())
        yield adapter
        await adapter.stop()

    return clock, clocked


def started_slacks() -> Any:
    """An ``adapters`` fixture for a test module (``adapters = started_slacks()``): ``await adapters()`` is a
    `SlackAdapter` on the module's ``fake``, started with a `Sink` (one per simulated process: a restart starts
    another); every one is stopped after the test."""

    @pytest.fixture
    async def adapters(fake: FakeSlack) -> AsyncIterator[Callable[[], Awaitable[SlackAdapter]]]:
        started: list[SlackAdapter] = []

        async def make() -> SlackAdapter:
            adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
            await adapter.start(Sink(), [])
            started.append(adapter)
            return adapter

        yield make
        for adapter in started:
            await adapter.stop()

    return adapters


def bot_posts(fake: FakeSlack, channel: str = "C1", thread: str | None = None) -> list[dict[str, Any]]:
    """The messages the bot has in ``channel`` (``thread``: the thread's replies), oldest first."""
    return [m for m in fake.messages.get((channel, thread), []) if m.get("bot_id")]
