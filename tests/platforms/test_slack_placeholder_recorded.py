"""A chat is recorded (`gateway.store.indicators_left`) as a `_working…_` placeholder is posted and forgotten
once it is deleted: a kill in between (the deletion waits a second past the reply's post) still brings the
next start there; on the real slack-sdk client against the loopback FakeSlack."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gateway.left_indicators import LeftIndicators
from gateway.store import GatewayStore
from platforms.base import Outbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.slack_client import fake_slack

PLACEHOLDER = "_working…_"


class Sink:
    async def __call__(self, inbound: object) -> None:
        return None


fake = fake_slack()


async def started(fake: FakeSlack, store: GatewayStore) -> tuple[SlackAdapter, LeftIndicators]:
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
    indicators = LeftIndicators(store, {"slack": adapter})
    adapter.bind_indicators_left(indicators.told("slack"))  # as `Gateway.start` binds it
    await adapter.start(Sink())
    return adapter, indicators


def committed(path: Path) -> set[tuple[str, str, str]]:
    """The rows another process (the next start) would read: committed ones only."""
    with sqlite3.connect(path) as conn:
        return set(conn.execute("SELECT platform, chat_id, thread_id FROM gateway_indicators_left"))


def texts(fake: FakeSlack, chat: str) -> list[str]:
    return [m.get("text", "") for m in fake.messages.get((chat, None), [])]


async def test_a_kill_between_the_reply_and_the_placeholders_deletion_leaves_it_to_the_next_start(
        fake: FakeSlack, tmp_path: Path) -> None:
    # Nothing made the next start look in the chat: the event was settled with the reply, so the placeholder
    # stayed for good.
    path = tmp_path / "state.db"
    store = GatewayStore(path)
    earlier, _ = await started(fake, store)
    try:
        await earlier.typing("C1", None)
        await earlier.send(Outbound("C1", None, "the answer"))
        await store.durable()
        assert committed(path) == {("slack", "C1", "")}
    finally:  # killed: the placeholder not deleted
        earlier._progress._placeholders.clear()
        await earlier.stop()
        store.close()
    assert texts(fake, "C1") == [PLACEHOLDER, "the answer"]
    store = GatewayStore(path)  # the next start's
    try:
        recorded = store.indicators_left.chats()
        adapter, indicators = await started(fake, store)
        try:
            for task in indicators.clear(recorded, recorded=recorded):
                await task
        finally:
            await adapter.stop()
        assert texts(fake, "C1") == ["the answer"]
        await store.durable()
        assert committed(path) == set()
    finally:
        store.close()


async def test_a_placeholder_deleted_is_forgotten_so_the_next_start_reads_no_chat(
        fake: FakeSlack, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = GatewayStore(path)
    adapter, _ = await started(fake, store)
    try:
        for chat in ("C1", "C2"):
            await adapter.typing(chat, None)
            await adapter.idle(chat, None)
        await adapter.typing("C3", None)
        await adapter.stop()  # deletes the one still shown
        await store.durable()
        assert committed(path) == set()
        assert texts(fake, "C3") == []
    finally:
        store.close()


async def test_a_chat_whose_deletion_slack_refused_stays_recorded_past_a_later_turns_deletion(
        fake: FakeSlack, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = GatewayStore(path)
    adapter, _ = await started(fake, store)
    try:
        await adapter.typing("C1", None)
        fake.fail_next("chat.delete", "invalid_auth")  # the token revoked mid-turn
        await adapter.idle("C1", None)
        await adapter.typing("C1", None)  # the next turn: Slack takes the token again
        await adapter.idle("C1", None)
        await store.durable()
        assert committed(path) == {("slack", "C1", "")}
    finally:
        await adapter.stop()
        store.close()


async def test_a_turns_placeholder_deleted_during_the_starts_clean_up_does_not_forget_the_chat(
        fake: FakeSlack, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = GatewayStore(path)
    store.indicators_left.record("slack", "C1", None)  # by the process before
    await store.durable()
    adapter, indicators = await started(fake, store)
    try:
        held = fake.hold("conversations.history")
        tasks = indicators.clear({("slack", "C1", None)}, recorded={("slack", "C1", None)})
        await adapter.typing("C1", None)
        await adapter.idle("C1", None)
        await store.durable()
        assert committed(path) == {("slack", "C1", "")}  # a kill now: the earlier placeholder is looked for
        held.set()
        for task in tasks:
            await task
    finally:
        await adapter.stop()
        store.close()
