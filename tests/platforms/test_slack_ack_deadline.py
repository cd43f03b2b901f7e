"""Slack wants an HTTP request answered within 3 seconds of sending it. The adapter waits for the gateway
to record an event or a slash command for up to ``sink_timeout`` (2 s) before answering, and that wait
counts from the request's arrival: a request that first queued for its signature check
(`platforms.unsigned_bodies`, up to 2 s) was answered after Slack gave up on it, a command's user shown an
error though the gateway had it, an event sent again. Real slack-bolt, over loopback, a stranger holding
the only place for unsigned bodies; the fake, as Slack, gives up on an answer after 3 seconds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from platforms.base import CommandSpec, Inbound
from platforms.fakes._waiting import wait_until
from platforms.fakes.slack import FakeSlack
from platforms.slack import SINK_TIMEOUT, SlackAdapter
from platforms.unsigned_bodies import UnsignedBodies
from tests.platforms.test_unsigned_bodies import FAKE_SLACK_SIGNATURE, LARGE, Raw, event, serve

SECRET = "ack-deadline-secret"
SLACK_GIVES_UP = 3.0
QUEUED = 1.5
"""Seconds a request waits behind the stranger (its ``patience``), under `UnsignedBodies`' 2 s wait."""


class Held:
    """A sink that records what it is given only once let go: a slow or locked database."""

    def __init__(self) -> None:
        self.let_go = asyncio.Event()
        self.recorded: list[Inbound] = []

    async def __call__(self, inbound: Inbound) -> None:
        await self.let_go.wait()
        self.recorded.append(inbound)


@pytest.fixture
async def queued() -> AsyncIterator[tuple[FakeSlack, SlackAdapter, Held, str]]:
    """An HTTP-mode adapter with the default ``sink_timeout`` whose one place for an unsigned body a
    stranger holds, trickling its body: the next request waits `QUEUED` seconds, then cuts it off."""
    async with FakeSlack() as fake:
        bodies = UnsignedBodies(1, patience=QUEUED)
        adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base,
                               bodies=bodies)
        runner, port = await serve(adapter.web_routes())
        sink = Held()
        await adapter.start(sink, [CommandSpec("new", "New session")])
        url = f"http://127.0.0.1:{port}/slack/events"
        fake.events_url, fake.signing_secret = url, SECRET
        plausible = {"X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": FAKE_SLACK_SIGNATURE}
        stranger = await Raw(port, "/slack/events", plausible, LARGE, b'{"type": "').open()
        try:
            await wait_until(lambda: bodies.reading == 1, 5.0, poll=0.01)
            yield fake, adapter, sink, url
        finally:
            stranger.close()
            sink.let_go.set()
            await adapter.stop()
            await runner.cleanup()
        assert bodies.cut_off == 1  # the request did wait its turn


async def test_a_queued_slash_command_is_acknowledged_within_3_seconds_of_arrival(queued) -> None:
    fake, _, sink, _ = queued
    loop = asyncio.get_running_loop()
    sent = loop.time()
    await fake.push_slash_command("/new", "U1", "DU1")  # the fake gives up after 3 s, and never sends it again
    answered = loop.time() - sent
    assert [(r.status, r.text) for r in fake.http_results] == [(200, "")]
    assert QUEUED <= answered < SLACK_GIVES_UP
    sink.let_go.set()
    await wait_until(lambda: sink.recorded, 5.0, poll=0.01)
    assert [i.text for i in sink.recorded] == ["/new"]


async def test_a_queued_event_is_acknowledged_within_3_seconds_of_arrival(queued) -> None:
    fake, _, sink, url = queued
    loop = asyncio.get_running_loop()
    sent = loop.time()
    result = await fake.send_http_event(url, event(1), SECRET)  # raises TimeoutError after Slack's 3 s
    answered = loop.time() - sent
    assert result.status == 200 and QUEUED <= answered < SLACK_GIVES_UP
    sink.let_go.set()
    await wait_until(lambda: sink.recorded, 5.0, poll=0.01)
    assert [i.text for i in sink.recorded] == ["message 1"]


async def test_a_queued_slack_connect_file_is_described_within_the_time_the_ack_may_wait(queued, caplog) -> None:
    # Describing a Slack Connect file (`platforms.slack_files.DESCRIBE_TIMEOUT`) counts from the request's
    # arrival too: counted from its own start, behind the queue, an unanswered files.info held the ack to 3 s.
    fake, _, sink, _ = queued
    unanswered = fake.hold("files.info")
    loop = asyncio.get_running_loop()
    sent = loop.time()
    try:
        await fake.push_file("DU1", "U1", b"x", "notes.txt", text="read this", connect=True)
    finally:
        unanswered.set()
    answered = loop.time() - sent
    assert [r.status for r in fake.http_results] == [200]  # Slack never sent it again
    assert QUEUED <= answered < SINK_TIMEOUT + 0.5  # acked 2 s after it came, as documented
    assert "could not be described: TimeoutError" in caplog.text
    sink.let_go.set()
    await wait_until(lambda: sink.recorded, 5.0, poll=0.01)
    assert [i.text for i in sink.recorded] == ["read this"]
