"""The file URL (``<api_base>/file/bot<token>/<path>``) refusing a download: a proxy in front answering 403,
a file gone (404, 410). A 403 was a `NetworkError`, asked for again (four tries, with backoff) to be refused
the same way before the user heard anything. Now 401 and 403 are `Forbidden` and 404 and 410 `NotFound`:
final, so the user is told at once that the file could not be fetched, and the message still reaches the
model. A 5xx, a 408 or a 429 stays a `NetworkError`, tried again. The real aiogram client against the
loopback fake, and the gateway's attachment preparation on top of it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.testing import FakeClock
from gateway.attachments import prepare
from platforms.base import Attachment, Forbidden, NetworkError, NotFound
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink

FORBIDDEN_PAGE = "<html><head><title>403 Forbidden</title></head><body>blocked by policy</body></html>"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def started(fake: FakeTelegram) -> AsyncIterator[tuple[TelegramAdapter, Attachment]]:
    adapter, sink = TelegramAdapter(fake.token, api_base=fake.base_url), Sink()
    await adapter.start(sink)
    fake.push_document(42, b"some notes", "notes.txt")
    await fake.wait_for(lambda: sink.inbound)
    (attachment,) = sink.inbound[0].attachments
    yield adapter, attachment
    await adapter.stop()


@pytest.mark.parametrize(("status", "kind"), [(401, Forbidden), (403, Forbidden), (404, NotFound), (410, NotFound)])
async def test_a_download_the_file_url_refuses_is_final(
        fake: FakeTelegram, started: tuple[TelegramAdapter, Attachment], status: int, kind: type) -> None:
    adapter, attachment = started
    fake.fail_next_download(status, FORBIDDEN_PAGE)
    with pytest.raises(kind) as refused:
        await adapter.download(attachment)
    assert str(refused.value) == f"downloading notes.txt failed: HTTP {status}"
    assert fake.token.partition(":")[2] not in str(refused.value)


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503])
async def test_a_download_the_file_url_fails_for_a_while_is_tried_again(
        fake: FakeTelegram, started: tuple[TelegramAdapter, Attachment], status: int) -> None:
    adapter, attachment = started
    fake.fail_next_download(status, "<html>later</html>")
    with pytest.raises(NetworkError):
        await adapter.download(attachment)
    assert await adapter.download(attachment) == b"some notes"


async def test_the_user_is_told_at_once_and_the_message_goes_on(
        fake: FakeTelegram, started: tuple[TelegramAdapter, Attachment], tmp_path: Path) -> None:
    adapter, attachment = started
    for _ in range(4):  # as many as the gateway would try
        fake.fail_next_download(403, FORBIDDEN_PAGE)
    prepared = await prepare(adapter, "telegram", (attachment,), "read this", workspace=tmp_path, folder="s-1",
                             supports_vision=False, clock=FakeClock(start=0.0))
    assert len(fake.downloads) == 1  # not asked for again: the proxy refuses it the same way
    assert prepared.notes == ["I'm not allowed to download notes\\.txt from telegram; please tell whoever runs me."]
    assert isinstance(prepared.content, str) and "read this" in prepared.content
