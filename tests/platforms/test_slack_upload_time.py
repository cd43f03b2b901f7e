"""A file the agent sends on Slack is given time to upload by its size, and given up after `STALLED`
seconds without progress (`platforms.slack_uploads`). Real slack-sdk and aiohttp against the loopback
FakeSlack, its upload URL reading slowly (``upload_pace``) or not at all (``hold("upload")``), every
timeout shrunk through its module constant."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from platforms import slack_uploads
from platforms.base import NetworkError, Outbound, OutboundFile
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_client import SlackWebClient
from tests.platforms.sink import Sink

WAIT = 10.0
"""Far past every shrunk timeout, far short of the 300 s that bounded an upload before."""
SLOW = 1024 * 1024
"""A file the fake reads in about a second (16 chunks of 64 KiB, `PACE` apart)."""
PACE = 0.06


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def adapter(fake: FakeSlack) -> AsyncIterator[SlackAdapter]:
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
    await adapter.start(Sink())
    yield adapter
    await adapter.stop()


@pytest.fixture
def stalled(fake: FakeSlack) -> Iterator[asyncio.Event]:
    """The upload URL takes no byte and answers nothing, until the test ends."""
    held = fake.hold("upload")
    yield held
    held.set()  # else the fake's shutdown waits for its handler


def file_of(tmp_path: Path, size: int) -> tuple[Outbound, OutboundFile]:
    path = tmp_path / "export.bin"
    path.write_bytes(b"x" * size)
    return Outbound("C1", None, "the export"), OutboundFile(str(path), "export.bin", size)


def shared(fake: FakeSlack) -> list[str]:
    return [f["id"] for m in fake.messages.get(("C1", None), []) for f in m.get("files", [])]


async def test_a_slow_upload_is_given_time_by_its_size_not_the_http_sessions_timeout(
        tmp_path: Path, fake: FakeSlack, monkeypatch: pytest.MonkeyPatch) -> None:
    # The session's bound (aiohttp's 300 s once, which bounded every upload whatever its size; `call_timeout`
    # now): shrunk as the upload's own are. It stays the JSON calls' bound.
    monkeypatch.setattr(slack_uploads, "TIMEOUT", 0.3)
    monkeypatch.setattr(slack_uploads, "SLOWEST_UPLOAD", SLOW / 3)  # 3 s more for this file
    monkeypatch.setattr(slack_uploads, "STALLED", 0.3)  # never 0.3 s without a chunk taken
    fake.upload_pace = PACE
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           call_timeout=0.3)
    await adapter.start(Sink())
    try:
        async with asyncio.timeout(WAIT):
            sent = await adapter.send_file(*file_of(tmp_path, SLOW))
    finally:
        await adapter.stop()
    assert shared(fake) == [sent.message_id] and fake.uploaded == {sent.message_id: 1}


async def test_an_upload_slower_than_its_size_allows_is_given_up_to_be_tried_again(
        tmp_path: Path, fake: FakeSlack, adapter: SlackAdapter, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slack_uploads, "TIMEOUT", 0.2)
    monkeypatch.setattr(slack_uploads, "SLOWEST_UPLOAD", SLOW / 0.1)  # 0.1 s more: the fake takes a second
    fake.upload_pace = PACE
    with pytest.raises(NetworkError, match="TimeoutError"):
        async with asyncio.timeout(WAIT):
            await adapter.send_file(*file_of(tmp_path, SLOW))
    assert shared(fake) == [] and fake.uploaded == {}


@pytest.mark.parametrize("size", [1000, 32 * 1024 * 1024], ids=["answer_stalled", "bytes_stalled"])
async def test_an_upload_that_stalls_is_given_up_long_before_its_size_allows(
        tmp_path: Path, fake: FakeSlack, adapter: SlackAdapter, stalled: asyncio.Event,
        monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    # 32 MB is more than loopback's buffers take: aiohttp is still writing when the upload URL stops
    # reading, where aiohttp's own read timeout (which starts once the body is sent) never looks.
    monkeypatch.setattr(slack_uploads, "STALLED", 0.3)  # the allowance for the size stays minutes
    loop = asyncio.get_running_loop()
    began = loop.time()
    with pytest.raises(NetworkError, match="TimeoutError"):
        async with asyncio.timeout(WAIT):
            await adapter.send_file(*file_of(tmp_path, size))
    assert loop.time() - began < 3 and shared(fake) == [] and fake.uploaded == {}


async def test_bytes_left_to_upload_once_the_adapter_closed_are_a_network_error(
        tmp_path: Path, fake: FakeSlack) -> None:
    # slack-sdk makes a session of its own for a call on a closed one: the bytes went on, unbounded, past close.
    async with aiohttp.ClientSession() as session:
        client = SlackWebClient(token=fake.bot_token, base_url=fake.api_base, session=session, retry_handlers=[])
    with pytest.raises(NetworkError, match="ClientConnectionError"):
        await slack_uploads.share(client, *file_of(tmp_path, 1000))
    assert fake.calls_to("upload") == [] and shared(fake) == []
