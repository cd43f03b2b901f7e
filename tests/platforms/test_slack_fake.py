"""FakeSlack itself, driven by the real slack-sdk clients (Web API, Socket Mode, webhooks, signatures)."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
import time
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from platforms.fakes.slack import FakeSlack, sign

SECRET = "fake-test-secret"


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(ack_timeout=0.2) as fake:
        yield fake


@pytest.fixture
async def web_client(fake: FakeSlack) -> AsyncIterator[AsyncWebClient]:
    async with aiohttp.ClientSession() as session:
        yield AsyncWebClient(token=fake.bot_token, base_url=fake.api_base, session=session, retry_handlers=[])


class Receiver:
    """A stand-in for a gateway's ``/slack/events``: records requests, answers with ``statuses`` in turn."""

    def __init__(self, statuses: list[int] | None = None, answer: dict[str, Any] | str | None = None) -> None:
        self.requests: list[tuple[dict[str, str], str]] = []
        self.statuses = statuses or []
        self.answer = answer
        """The body of every answer: JSON for a dict, plain text for a string."""
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.Response:
        self.requests.append((dict(request.headers), await request.text()))
        status = self.statuses.pop(0) if self.statuses else 200
        if isinstance(self.answer, dict):
            return web.json_response(self.answer, status=status)
        return web.Response(status=status, text=self.answer)

    async def __aenter__(self) -> Receiver:
        app = web.Application()
        app.router.add_post("/slack/events", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}/slack/events"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


def verified(headers: dict[str, str], body: str) -> bool:
    return SignatureVerifier(SECRET).is_valid(body, headers["X-Slack-Request-Timestamp"], headers["X-Slack-Signature"])


# -- Web API -------------------------------------------------------------------------------


async def test_auth_and_token_checks(fake: FakeSlack, web_client: AsyncWebClient) -> None:
    auth = await web_client.auth_test()
    assert (auth["user_id"], auth["bot_id"], auth["team_id"]) == ("UBOT", "BBOT", "T0FAKE")
    assert auth.headers["Content-Type"].startswith("application/json")
    with pytest.raises(SlackApiError) as caught:
        await web_client.chat_postMessage(channel="C1", text="x", token="xoxb-other")
    assert caught.value.response["error"] == "invalid_auth"
    with pytest.raises(SlackApiError):
        await web_client.apps_connections_open(app_token="xapp-other")
    assert [(c.method, c.token) for c in fake.calls] == [
        ("auth.test", "xoxb-fake"), ("chat.postMessage", "xoxb-other"), ("apps.connections.open", "xapp-other")]


async def test_messages_are_kept_per_channel_and_thread(fake: FakeSlack, web_client: AsyncWebClient) -> None:
    top = await web_client.chat_postMessage(channel="C1", text="top")
    reply = await web_client.chat_postMessage(channel="C1", text="reply", thread_ts=top["ts"])
    await web_client.chat_update(channel="C1", ts=reply["ts"], text="reply, edited")
    assert fake.texts("C1") == ["top"] and fake.texts("C1", top["ts"]) == ["reply, edited"]
    assert fake.messages[("C1", top["ts"])][0]["bot_id"] == "BBOT"
    await web_client.chat_delete(channel="C1", ts=reply["ts"])
    assert fake.texts("C1", top["ts"]) == []
    for call in (web_client.chat_delete(channel="C1", ts=reply["ts"]),
                 web_client.chat_update(channel="C1", ts=reply["ts"], text="x")):
        with pytest.raises(SlackApiError) as caught:
            await call
        assert caught.value.response["error"] == "message_not_found"
    eph = await web_client.chat_postEphemeral(channel="C1", user="U1", text="psst")
    assert eph["message_ts"] and fake.ephemeral[-1]["via"] == "chat.postEphemeral"
    dm = await web_client.chat_postMessage(channel="U7", text="to a user")
    assert dm["channel"] == "DU7" and fake.texts("DU7") == ["to a user"]


async def test_scripted_failures(fake: FakeSlack, web_client: AsyncWebClient) -> None:
    fake.fail_next("chat.postMessage", status=429, retry_after=7)
    fake.fail_next("chat.postMessage", "not_in_channel")
    with pytest.raises(SlackApiError) as limited:
        await web_client.chat_postMessage(channel="C1", text="x")
    assert limited.value.response.status_code == 429 and limited.value.response.headers["Retry-After"] == "7"
    assert limited.value.response["error"] == "ratelimited"
    with pytest.raises(SlackApiError) as refused:
        await web_client.chat_postMessage(channel="C1", text="x")
    assert refused.value.response["error"] == "not_in_channel"
    await web_client.chat_postMessage(channel="C1", text="x")
    assert fake.texts("C1") == ["x"] and len(fake.calls_to("chat.postMessage")) == 3


async def test_response_url(fake: FakeSlack) -> None:
    form = await fake.push_slash_command("/new", "U1", "DU1")  # no connection: queued for Socket Mode
    async with aiohttp.ClientSession() as session:
        hook = AsyncWebhookClient(form["response_url"], session=session)
        assert (await hook.send(text="done", response_type="ephemeral")).status_code == 200
        fake.fail_next("response_url", "used_url", status=404)
        failed = await hook.send(text="again")
    assert (failed.status_code, failed.body) == (404, "used_url")
    assert [(e["text"], e["via"]) for e in fake.ephemeral] == [("done", "response_url")]


# -- signed HTTP delivery ------------------------------------------------------------------


def test_signature_matches_the_sdk_verifier() -> None:
    ts = str(int(time.time()))
    assert SignatureVerifier(SECRET).is_valid('{"a":1}', ts, sign(SECRET, ts, '{"a":1}'))
    assert not SignatureVerifier(SECRET).is_valid('{"a":2}', ts, sign(SECRET, ts, '{"a":1}'))


async def test_http_pushes_are_signed_and_retried(fake: FakeSlack) -> None:
    async with Receiver(statuses=[500, 200]) as receiver:
        fake.events_url, fake.signing_secret = receiver.url, SECRET
        body = await fake.push_dm("U1", "hello")
        (first, first_body), (second, second_body) = receiver.requests
    assert "X-Slack-Retry-Num" not in first and second["X-Slack-Retry-Num"] == "1"
    assert first_body == second_body and verified(first, first_body) and verified(second, second_body)
    assert body["event_id"] in first_body and body["event"]["channel_type"] == "im"
    assert [r.status for r in fake.http_results] == [500, 200]


async def test_http_slash_command_is_form_encoded(fake: FakeSlack) -> None:
    async with Receiver() as receiver:
        fake.events_url, fake.signing_secret = receiver.url, SECRET
        await fake.push_slash_command("/stop", "U1", "C1", "now")
        [(headers, body)] = receiver.requests
    form = dict(urllib.parse.parse_qsl(body))
    assert headers["Content-Type"] == "application/x-www-form-urlencoded" and verified(headers, body)
    assert (form["command"], form["text"], form["channel_id"]) == ("/stop", "now", "C1")
    assert form["response_url"].startswith(fake.base_url + "/response/")


@pytest.mark.parametrize(("answer", "shown"), [
    ({"text": "on it"}, [("on it", "ephemeral")]),
    ({"text": "for everyone", "response_type": "in_channel"}, [("for everyone", "in_channel")]),
    ("plain words", [("plain words", "ephemeral")]),
    (None, []),  # an empty acknowledgement shows nothing
])
async def test_http_slash_command_answered_in_its_acknowledgement(fake: FakeSlack, answer, shown) -> None:
    async with Receiver(answer=answer) as receiver:
        fake.events_url, fake.signing_secret = receiver.url, SECRET
        await fake.push_slash_command("/stop", "U1", "C1")
    assert [(e["text"], e["response_type"]) for e in fake.ephemeral] == shown
    assert all((e["channel"], e["user"], e["via"]) == ("C1", "U1", "ack") for e in fake.ephemeral)


async def test_send_http_event_overrides(fake: FakeSlack) -> None:
    async with Receiver() as receiver:
        await fake.send_http_event(receiver.url, {"type": "x"}, SECRET, retry_num=2, timestamp=1, signature="v0=bad")
        [(headers, _)] = receiver.requests
    assert headers["X-Slack-Request-Timestamp"] == "1" and headers["X-Slack-Signature"] == "v0=bad"
    assert (headers["X-Slack-Retry-Num"], headers["X-Slack-Retry-Reason"]) == ("2", "http_timeout")


# -- Socket Mode ---------------------------------------------------------------------------


@pytest.fixture
async def socket_client(fake: FakeSlack, web_client: AsyncWebClient) -> AsyncIterator[SocketModeClient]:
    client = SocketModeClient(app_token=fake.app_token, web_client=web_client, ping_interval=0.2)
    yield client
    await client.close()
    pending = [t for t in (client.message_processor, client.current_session_monitor, client.message_receiver) if t]
    await asyncio.gather(*pending, return_exceptions=True)


async def test_socket_mode_hello_envelopes_acks_and_redelivery(
    fake: FakeSlack, socket_client: SocketModeClient
) -> None:
    seen: list[dict[str, Any]] = []
    requests: list[SocketModeRequest] = []

    async def on_message(client: Any, message: dict[str, Any], raw: str | None) -> None:
        seen.append(message)

    async def on_request(client: SocketModeClient, request: SocketModeRequest) -> None:
        requests.append(request)
        if request.retry_attempt:  # ignore the first delivery: the fake redelivers it
            await client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))

    socket_client.message_listeners.append(on_message)
    socket_client.socket_mode_request_listeners.append(on_request)  # type: ignore[arg-type]
    body = await fake.push_dm("U1", "queued before connecting")
    await socket_client.connect()
    await fake.wait_for(lambda: len(fake.acks) == 1)

    assert seen[0]["type"] == "hello" and seen[0]["connection_info"] == {"app_id": "A0FAKE"}
    assert [(r.retry_attempt, r.retry_reason) for r in requests][:2] == [(0, ""), (1, "timeout")]
    assert {r.envelope_id for r in requests} == {fake.acks[0].envelope_id}
    assert all(r.payload["event_id"] == body["event_id"] for r in requests)


async def test_socket_mode_gives_up_on_an_envelope_whose_third_retry_goes_unacked_too(
    fake: FakeSlack, socket_client: SocketModeClient
) -> None:
    attempts: list[int] = []

    async def on_request(client: SocketModeClient, request: SocketModeRequest) -> None:
        attempts.append(request.retry_attempt or 0)  # never acknowledged

    socket_client.socket_mode_request_listeners.append(on_request)  # type: ignore[arg-type]
    await socket_client.connect()
    await fake.push_dm("U1", "never acknowledged")
    [envelope] = await fake.wait_for(lambda: fake.given_up)
    assert attempts == [0, 1, 2, 3] and len(envelope.deliveries) == 4 and not envelope.acked


async def test_socket_mode_slash_command_ack_payload(fake: FakeSlack, socket_client: SocketModeClient) -> None:
    async def on_request(client: SocketModeClient, request: SocketModeRequest) -> None:
        await client.send_socket_mode_response(
            SocketModeResponse(envelope_id=request.envelope_id, payload={"text": "on it"}))

    socket_client.socket_mode_request_listeners.append(on_request)  # type: ignore[arg-type]
    await socket_client.connect()
    await fake.push_slash_command("/agents", "U1", "C1")
    await fake.wait_for(lambda: len(fake.acks) == 1)
    [envelope] = fake.envelopes.values()
    assert envelope.type == "slash_commands" and envelope.wire()["accepts_response_payload"] is True
    assert fake.acks[0].payload == {"text": "on it"}
    assert fake.ephemeral == [{"channel": "C1", "user": "U1", "text": "on it", "response_type": "ephemeral",
                               "via": "ack"}]


async def test_disconnect_and_drop(fake: FakeSlack, socket_client: SocketModeClient) -> None:
    await socket_client.connect()
    await fake.wait_for(lambda: len(fake.open_connections) == 1)
    await fake.disconnect()
    await fake.wait_for(lambda: len(fake.connections) == 2 and [c.id for c in fake.open_connections] == [2])
    fake.drop_socket()
    await fake.wait_for(lambda: len(fake.connections) == 3 and [c.id for c in fake.open_connections] == [3])
    assert len(fake.calls_to("apps.connections.open")) == 3


# -- command line --------------------------------------------------------------------------


async def test_command_line_fake_serves_until_interrupted() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "platforms.fakes.slack", "--port", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        lines: list[str] = []
        while not lines or "Ctrl-C" not in lines[-1]:
            line = await asyncio.wait_for(proc.stdout.readline(), 20)
            assert line, "the fake exited early"
            lines.append(line.decode())
        api_base = re.search(r"(http://\S+/api/)", "".join(lines))
        assert api_base is not None
        async with aiohttp.ClientSession() as session:
            client = AsyncWebClient(token="xoxb-fake", base_url=api_base.group(1), session=session)
            assert (await client.auth_test())["user_id"] == "UBOT"
            base = api_base.group(1).removesuffix("/api/")
            async with session.post(f"{base}/_fake/dm", json={"user": "U1", "text": "hi"}) as resp:
                assert resp.status == 200 and (await resp.json())["event"]["text"] == "hi"
            async with session.get(f"{base}/_fake/messages") as resp:
                assert [m["text"] for m in (await resp.json())["messages"]] == ["hi"]
    finally:
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 20) == 0
