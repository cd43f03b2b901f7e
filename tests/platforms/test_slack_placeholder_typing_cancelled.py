"""`typing` cancelled while `idle` drops its placeholder, which waited for its turn, in the same turn of the
loop: the cancellation is the caller's and goes on (`Placeholders.typing`); on the real slack-sdk client
against the loopback FakeSlack."""

from __future__ import annotations

import asyncio

from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack

fake = fake_slack()


async def test_typing_cancelled_as_idle_drops_its_queued_placeholder_ends_cancelled(fake: FakeSlack) -> None:
    # It returned as if only `idle` had dropped the placeholder: the caller's cancellation was lost.
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
    await adapter.start(Sink())
    try:
        its_turn, waiting = asyncio.Event(), asyncio.Event()

        async def turn(chat_id: str) -> None:  # the outbox's pace: the placeholder waits its turn
            waiting.set()
            await its_turn.wait()

        adapter.bind_turns(turn)
        typing = asyncio.ensure_future(adapter.typing("C1", None))
        await waiting.wait()
        await adapter.idle("C1", None)  # drops the post, which ends before `typing` wakes to its cancellation
        typing.cancel()
        await asyncio.wait((typing,))
        assert typing.cancelled()
        assert fake.messages.get(("C1", None), []) == []
    finally:
        await adapter.stop()
