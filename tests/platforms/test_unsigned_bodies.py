"""Unauthenticated requests cost little: the webhook and Slack HTTP routes refuse from the headers
what no body could make valid, before reading a byte of it, and read at most a few bodies at once
before their signature is checked (`platforms.unsigned_bodies`). Over real sockets, with raw
requests that announce a body and never send it."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from platforms.fakes._waiting import wait_until
from platforms.fakes.slack import FakeSlack
from platforms.fakes.webhook_receiver import signed_post
from platforms.slack import SlackAdapter
from platforms.unsigned_bodies import UnsignedBodies
from platforms.webhook import WebhookAdapter
from platforms.webhook_signing import sign

SECRET = "unsigned-bodies-secret-0123"
LARGE = 900_000  # under both caps: a stranger's body the old code buffered whole before refusing it
FAKE_WEBHOOK_SIGNATURE = "v1=" + "0" * 64
FAKE_SLACK_SIGNATURE = "v0=" + "0" * 64


class Sink:
    def __init__(self) -> None:
        self.texts: list[str] = []

    async def __call__(self, inbound):
        self.texts.append(inbound.text)


async def serve(routes) -> tuple[web.AppRunner, int]:
    app = web.Application(client_max_size=2 * 1024 * 1024)  # the gateway's server's limit
    app.router.add_routes(routes)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, runner.addresses[0][1]


class Raw:
    """One request over its own connection: headers (and maybe part of a body) now, the rest later."""

    def __init__(self, port: int, path: str, headers: dict[str, str], length: int, first: bytes = b"") -> None:
        self.port, self.path, self.headers, self.length, self.first = port, path, headers, length, first

    async def open(self) -> Raw:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        lines = [f"POST {self.path} HTTP/1.1", "Host: gateway", "Content-Type: application/json",
                 f"Content-Length: {self.length}", *(f"{k}: {v}" for k, v in self.headers.items())]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + self.first)
        await self.writer.drain()
        return self

    async def send(self, rest: bytes) -> None:
        self.writer.write(rest)
        await self.writer.drain()

    async def answer(self, timeout: float = 5.0) -> tuple[int, dict[str, str], bytes]:
        """The status, headers and body, as soon as the server answers (nothing more of ours sent)."""
        async with asyncio.timeout(timeout):
            head = await self.reader.readuntil(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            headers = dict(line.split(": ", 1) for line in lines[1:] if line)
            body = await self.reader.readexactly(int(headers.get("Content-Length", "0")))
        return int(lines[0].split(" ", 2)[1]), headers, body

    def close(self) -> None:
        self.writer.close()


# -- the webhook platform ------------------------------------------------------------------


@pytest.fixture
async def webhook() -> AsyncIterator[tuple[WebhookAdapter, Sink, int]]:
    adapter = WebhookAdapter({"hook": (SECRET, None)},
                             bodies=UnsignedBodies(2, wait=0.0, patience=60.0))
    sink = Sink()
    await adapter.start(sink)
    runner, port = await serve(adapter.web_routes())
    yield adapter, sink, port
    await runner.cleanup()
    await adapter.stop()


@pytest.mark.parametrize("headers, reason", [
    ({}, "missing timestamp"),
    ({"X-Switchboard-Timestamp": "1700000000"}, "missing signature"),
    ({"X-Switchboard-Timestamp": "soon", "X-Switchboard-Signature": FAKE_WEBHOOK_SIGNATURE}, "malformed timestamp"),
    ({"X-Switchboard-Timestamp": "1700000000", "X-Switchboard-Signature": "v2=" + "0" * 64},
     "unsupported signature scheme"),
    ({"X-Switchboard-Timestamp": "1700000000", "X-Switchboard-Signature": "v1=00"}, "malformed signature"),
])
async def test_a_webhook_request_without_usable_signature_headers_is_refused_before_its_body(webhook, headers,
                                                                                              reason):
    _, sink, port = webhook
    stranger = await Raw(port, "/webhooks/hook", headers, LARGE).open()  # the body never comes
    status, _, body = await stranger.answer()
    stranger.close()
    assert (status, json.loads(body)["error"]) == (401, reason)
    assert sink.texts == []


@pytest.mark.parametrize("path, headers, length, status", [
    ("/webhooks/hook", {"X-Switchboard-Timestamp": "1700000000"}, LARGE, 401),
    ("/webhooks/elsewhere", {}, LARGE, 404),
    ("/webhooks/hook", {"X-Switchboard-Timestamp": "1700000000", "X-Switchboard-Signature": FAKE_WEBHOOK_SIGNATURE},
     2_000_000, 413),
], ids=["signature headers", "route", "length"])
async def test_a_webhook_request_expecting_100_continue_gets_its_refusal_instead(webhook, path, headers, length,
                                                                                  status):
    # A client that asks first must not be told to send a body that would be refused unread.
    stranger = await Raw(webhook[2], path, {**headers, "Expect": "100-continue"}, length).open()
    answer, _, _ = await stranger.answer()
    stranger.close()
    assert answer == status


async def test_a_plausible_webhook_request_expecting_100_continue_is_told_to_send_its_body(webhook):
    _, sink, port = webhook
    body, timestamp = json.dumps({"text": "asked first"}).encode(), str(int(time.time()))
    signed = {"X-Switchboard-Timestamp": timestamp, "X-Switchboard-Signature": sign(SECRET, timestamp, body),
              "Expect": "100-continue"}
    caller = await Raw(port, "/webhooks/hook", signed, len(body)).open()
    assert (await caller.answer())[0] == 100
    await caller.send(body)
    status, _, _ = await caller.answer()
    caller.close()
    assert status == 202 and sink.texts == ["asked first"]


async def test_webhook_bodies_read_before_their_signature_is_checked_are_bounded(webhook):
    adapter, sink, port = webhook
    plausible = {"X-Switchboard-Timestamp": str(int(time.time())), "X-Switchboard-Signature": FAKE_WEBHOOK_SIGNATURE}
    slow = [await Raw(port, "/webhooks/hook", plausible, LARGE, b'{"text": "').open() for _ in range(2)]
    await wait_until(lambda: adapter._bodies.reading == 2, 5.0, poll=0.01)
    third = await Raw(port, "/webhooks/hook", plausible, LARGE, b'{"text": "').open()
    status, headers, body = await third.answer()
    third.close()
    assert (status, headers.get("Retry-After"), json.loads(body)) == (
        503, "1", {"error": "too many requests at once; retry shortly"})
    for stranger in slow:
        stranger.close()  # their places are free again
    await wait_until(lambda: adapter._bodies.reading == 0, 5.0, poll=0.01)
    reply = await signed_post(f"http://127.0.0.1:{port}/webhooks/hook", SECRET, {"text": "still served"})
    assert reply.status == 202 and sink.texts == ["still served"]


async def test_a_body_trickling_while_others_wait_is_cut_off_to_make_room():
    bodies = UnsignedBodies(1, wait=5.0, patience=0.0)
    adapter = WebhookAdapter({"hook": (SECRET, None)}, bodies=bodies)
    sink = Sink()
    await adapter.start(sink)
    runner, port = await serve(adapter.web_routes())
    try:
        plausible = {"X-Switchboard-Timestamp": str(int(time.time())),
                     "X-Switchboard-Signature": FAKE_WEBHOOK_SIGNATURE}
        slow = await Raw(port, "/webhooks/hook", plausible, LARGE, b'{"text": "').open()
        await wait_until(lambda: bodies.reading == 1, 5.0, poll=0.01)
        reply = await signed_post(f"http://127.0.0.1:{port}/webhooks/hook", SECRET, {"text": "sent at once"})
        assert reply.status == 202 and sink.texts == ["sent at once"]
        status, headers, _ = await slow.answer()
        slow.close()
        assert (status, headers.get("Retry-After"), bodies.cut_off) == (503, "1", 1)
    finally:
        await runner.cleanup()
        await adapter.stop()


# -- Slack in HTTP mode --------------------------------------------------------------------


@pytest.fixture
async def slack() -> AsyncIterator[tuple[FakeSlack, SlackAdapter, Sink, int]]:
    async with FakeSlack() as fake:
        adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base,
                               bodies=UnsignedBodies(2, wait=0.0, patience=60.0))
        runner, port = await serve(adapter.web_routes())
        sink = Sink()
        await adapter.start(sink)
        yield fake, adapter, sink, port
        await adapter.stop()
        await runner.cleanup()


def event(n: int) -> dict:
    return {"type": "event_callback", "event_id": f"Ev{n}", "team_id": "T1",
            "event": {"type": "message", "channel": "DU1", "channel_type": "im", "user": "U1", "ts": f"{n}.1",
                      "text": f"message {n}"}}


@pytest.mark.parametrize("timestamp, signature", [
    (None, None),
    ("now", FAKE_SLACK_SIGNATURE),
    (0, "v0=00"),
    (0, "v1=" + "0" * 64),
    (-302, FAKE_SLACK_SIGNATURE),
    (302, FAKE_SLACK_SIGNATURE),
], ids=["none", "timestamp not a number", "short signature", "other scheme", "stale", "ahead"])
async def test_a_slack_request_that_could_not_be_signed_is_refused_before_its_body(slack, timestamp, signature):
    _, _, sink, port = slack
    headers = {}
    if timestamp is not None:  # seconds from now, or text
        sent = timestamp if isinstance(timestamp, str) else str(int(time.time()) + timestamp)
        headers = {"X-Slack-Request-Timestamp": sent, "X-Slack-Signature": signature}
    stranger = await Raw(port, "/slack/events", headers, LARGE).open()
    status, _, body = await stranger.answer()
    stranger.close()
    assert (status, json.loads(body)) == (401, {"error": "invalid request"})
    assert sink.texts == []


@pytest.mark.parametrize("timestamp, length, status", [(-302, 10, 401), (0, 2 * 1024 * 1024 + 1, 413)],
                         ids=["stale", "length"])
async def test_a_slack_request_expecting_100_continue_gets_its_refusal_instead(slack, timestamp, length, status):
    headers = {"X-Slack-Request-Timestamp": str(int(time.time()) + timestamp),
               "X-Slack-Signature": FAKE_SLACK_SIGNATURE, "Expect": "100-continue"}
    stranger = await Raw(slack[3], "/slack/events", headers, length).open()
    answer, _, _ = await stranger.answer()
    stranger.close()
    assert answer == status


async def test_a_slack_body_announced_over_the_limit_is_refused_before_it_is_read(slack):
    _, _, _, port = slack
    plausible = {"X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": FAKE_SLACK_SIGNATURE}
    stranger = await Raw(port, "/slack/events", plausible, 2 * 1024 * 1024 + 1).open()
    status, _, _ = await stranger.answer()
    stranger.close()
    assert status == 413


async def test_slack_bodies_read_before_their_signature_is_checked_are_bounded(slack):
    fake, adapter, sink, port = slack
    plausible = {"X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": FAKE_SLACK_SIGNATURE}
    slow = [await Raw(port, "/slack/events", plausible, LARGE, b'{"type": "').open() for _ in range(2)]
    await wait_until(lambda: adapter._bodies.reading == 2, 5.0, poll=0.01)
    # Slack itself is turned away too while strangers hold every place, with an answer it retries.
    refused = await fake.send_http_event(f"http://127.0.0.1:{port}/slack/events", event(1), SECRET)
    assert (refused.status, refused.headers.get("Retry-After")) == (503, "1")
    for stranger in slow:
        stranger.close()
    await wait_until(lambda: adapter._bodies.reading == 0, 5.0, poll=0.01)
    retried = await fake.send_http_event(f"http://127.0.0.1:{port}/slack/events", event(1), SECRET, retry_num=1)
    assert retried.status == 200 and sink.texts == ["message 1"]


async def test_a_legitimate_burst_from_slack_waits_for_places_and_is_served_whole():
    async with FakeSlack() as fake:
        adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base,
                               bodies=UnsignedBodies(2))  # the default wait and patience
        runner, port = await serve(adapter.web_routes())
        sink = Sink()
        await adapter.start(sink)
        try:
            url = f"http://127.0.0.1:{port}/slack/events"
            results = await asyncio.gather(*(fake.send_http_event(url, event(n), SECRET) for n in range(30)))
            assert [r.status for r in results] == [200] * 30
            assert sorted(sink.texts) == sorted(f"message {n}" for n in range(30))
        finally:
            await adapter.stop()
            await runner.cleanup()


async def test_a_signed_slack_event_still_reaches_the_gateway(slack):
    fake, _, sink, port = slack
    result = await fake.send_http_event(f"http://127.0.0.1:{port}/slack/events", event(7), SECRET)
    assert result.status == 200 and sink.texts == ["message 7"]
