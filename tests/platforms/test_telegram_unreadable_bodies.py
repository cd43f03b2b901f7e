"""Answers of the Bot API that are not its JSON: a proxy's 502 page (labelled ``application/json`` or not), an
empty 5xx, a 200 page of a proxy in between, a body cut short. aiogram parses every body whatever its status
or Content-Type and raises `ClientDecodeError` for these, which the adapter takes for a `NetworkError`: the
outbox tries the part again rather than dropping it. Telegram's own 400 stays a `BadRequest`. The real aiogram
client against the loopback fake."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.base import BadRequest, Inbound, NetworkError, Outbound
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter

PAGE = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
JSON = "application/json"
CHAT = "7"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def adapter(fake: FakeTelegram) -> AsyncIterator[TelegramAdapter]:
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    await adapter.start(_ignore, [])
    yield adapter
    await adapter.stop()


@pytest.mark.parametrize(("status", "body", "content_type"), [
    (502, PAGE, "text/html"),
    (502, PAGE, JSON),
    (503, "", "text/plain"),
    (200, "<html>proxy</html>", "text/html"),
    (200, '{"o', JSON),  # cut before it says "ok": true (one cut after is a send: test_telegram_sent_without_id)
], ids=["502-page", "502-page-as-json", "503-empty", "200-page", "200-cut-short"])
async def test_a_post_answered_with_no_json_of_telegrams_is_a_network_error_and_sent_at_the_next_try(
        fake: FakeTelegram, adapter: TelegramAdapter, status: int, body: str, content_type: str) -> None:
    fake.fail_next("sendMessage", status, body=body, content_type=content_type)
    with pytest.raises(NetworkError):
        await adapter.send(Outbound(CHAT, None, "hello"))
    await adapter.send(Outbound(CHAT, None, "hello"))  # the outbox's next try
    assert [m["text"] for m in fake.messages[CHAT]] == ["hello"]


async def test_telegrams_own_400_stays_a_bad_request(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    fake.fail_next("sendMessage", 400, description="Bad Request: message text is empty")
    with pytest.raises(BadRequest):
        await adapter.send(Outbound(CHAT, None, "hello"))


async def _ignore(_inbound: Inbound) -> None:
    return None
