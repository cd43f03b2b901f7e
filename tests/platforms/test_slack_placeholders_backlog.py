"""The placeholders' bookkeeping under load (`platforms.slack_placeholders`): deletions go 50 a minute across the
workspace, so past that many waiting no new placeholder is posted (each turn's end owed one more, and they fell
further behind for as long as it lasted); and the conversations kept from being said clean are bounded. The real
slack-sdk client against the loopback FakeSlack, the pacer's turns for deletions held by the test."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from platforms import slack_placeholders
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack, slack_on
from tests.platforms.test_slack_placeholders_left_behind import PLACEHOLDER, texts

fake = fake_slack()


class DeletionTurns:
    """The gateway's pacer for the adapter's own writes: a deletion's turn comes once ``go`` is set."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.waiting = 0

    async def __call__(self, chat_id: str, op: str | None = None) -> None:
        if op != "delete":
            return
        self.waiting += 1
        try:
            await self.go.wait()
        finally:
            self.waiting -= 1


@pytest.fixture
async def slack(fake: FakeSlack) -> AsyncIterator[SlackAdapter]:
    adapter = slack_on(fake)
    await adapter.start(Sink())
    yield adapter
    await adapter.stop()


async def test_no_placeholder_is_posted_while_deletions_are_a_minute_behind(
        fake: FakeSlack, slack: SlackAdapter, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(slack_placeholders, "DELETIONS_BEHIND", 4, raising=False)
    turns = DeletionTurns()
    slack.bind_turns(turns)
    chats = [f"C{n}" for n in range(4)]
    for chat in chats:
        await slack.typing(chat, None)
    ending = [asyncio.ensure_future(slack.idle(chat, None)) for chat in chats]
    try:
        await fake.wait_for(lambda: turns.waiting == 4)
        await slack.typing("C9", None)
        assert texts(fake, "C9") == []  # one more deletion to wait: the turn goes without
        assert any("no new placeholder is posted" in r.getMessage() for r in caplog.records
                   if r.levelno == logging.WARNING)
        turns.go.set()
        await asyncio.gather(*ending)
    finally:
        turns.go.set()
        await asyncio.gather(*ending, return_exceptions=True)
    assert all(texts(fake, chat) == [] for chat in chats)
    await slack.typing("C9", None)  # caught up: posted again
    assert texts(fake, "C9") == [PLACEHOLDER]


async def test_the_conversations_kept_for_the_next_starts_clean_up_are_bounded(
        fake: FakeSlack, slack: SlackAdapter, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    # One more per conversation a failure left a placeholder in, for as long as the process ran.
    monkeypatch.setattr(slack_placeholders, "KEPT_MOST", 2, raising=False)
    fake.fail_next("chat.postMessage", "internal_error", status=500, times=3)
    for chat in ("C1", "C2", "C3"):
        await slack.typing(chat, None)  # lost its answer: may be there, looked for by the next start
    kept = slack._progress._kept
    assert list(kept) == [("C2", None), ("C3", None)]
    [warned] = [r for r in caplog.records if r.levelno == logging.WARNING and "forgotten first" in r.getMessage()]
    assert "C1" in warned.getMessage()
