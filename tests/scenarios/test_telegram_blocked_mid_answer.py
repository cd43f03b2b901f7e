"""A user who blocks the bot while a long answer is on its way: the real outbox and `TelegramAdapter` against
`FakeTelegram`, on a fake clock. Every part is refused (403) at once; the operator reads one WARNING for the chat,
not one per part (nor for the note of the first, refused too). A user who unblocks the bot gets the next answer as
always."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter

CHAT = "42"
BLOCKED = "Forbidden: bot was blocked by the user"
PARAGRAPHS = [f"paragraph {i} " + "x" * 3000 for i in range(3)]  # one part each
WAIT = 5.0


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(clock, tmp_path) -> Iterator[GatewayStore]:
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    yield store
    store.close()


@pytest.fixture
async def outbox(fake, clock, store) -> AsyncIterator[Outbox]:
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    outbox = Outbox(store.outbox, {"telegram": adapter}, clock=clock)
    await outbox.start()
    try:
        yield outbox
    finally:
        await outbox.close()
        await adapter.stop()


def answer(outbox: Outbox, turn: str) -> list[str]:
    return outbox.enqueue("telegram", CHAT, None, "\n\n".join(PARAGRAPHS), kind="reply", key=f"{turn}:reply",
                          turn_id=turn)


def texts(fake: FakeTelegram) -> list[str]:
    return [m["text"] for m in fake.messages[CHAT]]


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


async def test_an_answer_to_a_user_who_blocked_the_bot_is_one_warning(fake, clock, store, outbox,
                                                                                   caplog):
    caplog.set_level(logging.INFO)
    for _ in range(len(PARAGRAPHS) + 1):  # the parts, and the note of the first
        fake.fail_next("sendMessage", 403, description=BLOCKED)
    keys = answer(outbox, "t1")
    assert len(keys) == len(PARAGRAPHS)
    assert await outbox.flush(timeout=WAIT)
    assert len(fake.calls_to("sendMessage")) == len(PARAGRAPHS) + 1  # each part tried once, and the note of the first
    assert texts(fake) == []
    [warning] = warnings(caplog)
    assert warning == f"outbox: telegram chat {CHAT}: {keys[0]} failed: {BLOCKED}"
    # The console shows each part's error all the same.
    assert [store.outbox.message(key).last_error for key in keys] == [BLOCKED] * len(PARAGRAPHS)

    clock.advance(600)  # the next refusal past the window is logged again, with how many were not
    fake.fail_next("sendMessage", 403, description=BLOCKED)
    outbox.enqueue("telegram", CHAT, None, "are you there?", kind="reply", key="t2:reply", turn_id="t2")
    assert await outbox.flush(timeout=WAIT)
    line, _, count = warnings(caplog)[1].partition(" (and ")
    assert line == f"outbox: telegram chat {CHAT}: t2:reply:0 failed: {BLOCKED}"
    assert count.startswith(f"{len(PARAGRAPHS)} more like it in the last 60")  # and the parts' pacing

    # The user unblocks the bot: the next answer goes out as always.
    outbox.enqueue("telegram", CHAT, None, "welcome back", kind="reply", key="t3:reply", turn_id="t3")
    assert await outbox.flush(timeout=WAIT)
    assert texts(fake) == ["welcome back"]

