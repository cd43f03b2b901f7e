"""FakeTelegram's opt-in flood control: Telegram's limits per chat, per group and overall, as 429s
with ``retry_after``, measured on the clock the test gives it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import ClientSession

from agent.testing import FakeClock
from platforms.fakes._telegram_flood import Window
from platforms.fakes.telegram import FakeTelegram


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram("42:TOKEN") as fake:
        yield fake


async def call(http: ClientSession, fake: FakeTelegram, method: str, **params: Any) -> tuple[int, dict[str, Any]]:
    async with http.post(f"{fake.base_url}/bot{fake.token}/{method}", data={k: str(v) for k, v in params.items()}) as r:
        return r.status, await r.json()


async def test_off_by_default(fake: FakeTelegram, http: ClientSession) -> None:
    for n in range(5):
        assert (await call(http, fake, "sendMessage", chat_id=7, text=f"m{n}"))[0] == 200
    assert fake.flood is None


async def test_a_second_message_within_a_second_in_one_chat_is_refused_as_telegram_refuses_it(
        fake: FakeTelegram, http: ClientSession) -> None:
    clock = FakeClock(autojump=False)
    flood = fake.enforce_flood_limits(clock)
    assert (await call(http, fake, "sendMessage", chat_id=7, text="one"))[0] == 200
    assert (await call(http, fake, "sendMessage", chat_id=8, text="another chat"))[0] == 200
    clock.advance(0.4)
    status, body = await call(http, fake, "editMessageText", chat_id=7, message_id=1, text="edited")  # edits count
    assert (status, body) == (429, {"ok": False, "error_code": 429, "description": "Too Many Requests: retry after 1",
                                    "parameters": {"retry_after": 1}})
    assert fake.messages["7"][0]["text"] == "one"  # refused: nothing changed, and not counted
    clock.advance(0.6)
    assert (await call(http, fake, "editMessageText", chat_id=7, message_id=1, text="edited"))[0] == 200
    assert [(r.method, r.chat_id, r.retry_after, r.limit) for r in flood.refused] == [
        ("editMessageText", "7", 1, "chat")]
    assert [(w.method, w.chat_id) for w in flood.writes] == [
        ("sendMessage", "7"), ("sendMessage", "8"), ("editMessageText", "7")]


async def test_a_group_takes_20_messages_a_minute_and_says_when_the_oldest_leaves(
        fake: FakeTelegram, http: ClientSession) -> None:
    clock = FakeClock(autojump=False)
    flood = fake.enforce_flood_limits(clock)
    for n in range(20):
        assert (await call(http, fake, "sendMessage", chat_id=-100, text=f"m{n}", message_thread_id=n % 2 + 1))[0] == 200
        clock.advance(1.5)  # inside one a second; topics share the group's minute
    status, body = await call(http, fake, "sendMessage", chat_id=-100, text="one too many")
    assert (status, body["parameters"]) == (429, {"retry_after": 30})  # 60 s after the first, sent 30 s ago
    clock.advance(30)
    assert (await call(http, fake, "sendMessage", chat_id=-100, text="now it fits"))[0] == 200
    assert [r.limit for r in flood.refused] == ["group"]
    assert len(fake.messages["-100"]) == 21


async def test_30_writes_a_second_overall_and_a_refused_bad_request_is_not_counted(
        fake: FakeTelegram, http: ClientSession) -> None:
    clock = FakeClock(autojump=False)
    flood = fake.enforce_flood_limits(clock, overall=Window(3, 1.0))
    assert (await call(http, fake, "sendMessage", chat_id=1, text=""))[0] == 400  # empty: never sent
    for chat in (1, 2, 3):
        assert (await call(http, fake, "sendMessage", chat_id=chat, text="hi"))[0] == 200
    assert (await call(http, fake, "sendChatAction", chat_id=4, action="typing"))[0] == 200  # not a message
    status, body = await call(http, fake, "sendMessage", chat_id=4, text="hi")
    assert (status, body["parameters"]["retry_after"]) == (429, 1)
    assert [r.limit for r in flood.refused] == ["overall"] and len(flood.writes) == 3
