"""WebhookAdapter over loopback HTTP: signed requests in, signed deliveries out to WebhookReceiver.

Also covers `platforms.webhook_signing` and the receiver fake, which exist for this adapter.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from platforms.base import Accepted, Adapter, EditUnsupported, Inbound, NetworkError, NotFound, Outbound, TurnRead
from platforms.fakes.webhook_receiver import WebhookReceiver, signed_get, signed_post
from platforms.webhook import MAX_BODY, Route, WebhookAdapter
from platforms.webhook_signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, get_payload, sign, verify
from tests.sqlite_errors import full_disk

SECRET = "alerts-secret-0123456789"
OTHER_SECRET = "reader-secret-abcdef"
NOW = 1_700_000_000.0
TS = str(int(NOW))


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


class Sink:
    """Stands in for the gateway: records inbounds and, like its inbox, answers a repeated
    event id as a duplicate of the turn it started."""

    def __init__(self) -> None:
        self.inbound: list[Inbound] = []
        self.turns: dict[str, str] = {}
        self.fail = False

    async def __call__(self, inbound: Inbound) -> Accepted:
        self.inbound.append(inbound)
        if self.fail:  # the store's refusal, tried again (a fault of the message is final)
            raise full_disk()
        session = f"webhook:{inbound.chat_id}"
        if inbound.event_id in self.turns:
            return Accepted(self.turns[inbound.event_id], session, duplicate=True)
        turn = self.turns[inbound.event_id] = f"turn-{len(self.turns) + 1}"
        return Accepted(turn, session)


class Reader:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    async def __call__(self, route: str, turn_id: str) -> TurnRead:
        self.calls.append((route, turn_id))
        if turn_id == "missing":
            raise KeyError(turn_id)
        return TurnRead([{"key": f"{turn_id}:reply:0", "chat_id": f"{route}:ops", "turn_id": turn_id, "kind": "reply",
                          "text": f"answer to {turn_id}", "sequence": 0, "status": "sent"}], complete=True)


async def serve(*routes: web.RouteDef) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.add_routes(routes)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


@pytest.fixture
async def receiver() -> AsyncIterator[WebhookReceiver]:
    async with WebhookReceiver(SECRET, clock=lambda: NOW) as receiver:
        yield receiver


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def reader() -> Reader:
    return Reader()


@pytest.fixture
async def adapter(receiver: WebhookReceiver, clock: Clock, reader: Reader) -> AsyncIterator[WebhookAdapter]:
    routes = {"alerts": Route(SECRET, receiver.url), "reader": (OTHER_SECRET, None)}
    adapter = WebhookAdapter(routes, turn_reader=reader, clock=clock, delivery_timeout=2.0)
    yield adapter
    await adapter.stop()


@pytest.fixture
async def sink(adapter: WebhookAdapter) -> Sink:
    sink = Sink()
    await adapter.start(sink)
    return sink


@pytest.fixture
async def base(adapter: WebhookAdapter) -> AsyncIterator[str]:
    runner, url = await serve(*adapter.web_routes())
    yield url
    await runner.cleanup()


def body_of(payload: Any) -> bytes:
    return json.dumps(payload).encode()


# -- the adapter's shape -----------------------------------------------------------


def test_is_an_adapter_with_the_webhook_tier() -> None:
    adapter = WebhookAdapter({"a": ("s", None)})
    assert isinstance(adapter, Adapter)
    assert adapter.name == "webhook"
    assert adapter.tier.interim_assistant_messages is False
    assert adapter.tier.long_running_notifications is False
    assert adapter.tier.messaging is False
    assert adapter.retry_for_seconds == 3600.0
    assert adapter.measure("😀x") == 2
    assert adapter.text_limit >= 100_000


def test_routes_from_config_objects_and_tuples() -> None:
    class Setting:
        secret, deliver_url = "s", "http://127.0.0.1:1/x"

    adapter = WebhookAdapter({"a": Setting(), "b": ("t", None)}, retry_for_seconds=60)
    assert adapter.routes == {"a": Route("s", "http://127.0.0.1:1/x"), "b": Route("t", None)}
    assert adapter.retry_for_seconds == 60


@pytest.mark.parametrize("routes", [{"a": ("", None)}, {"a": (None, None)}, {"a:b": ("s", None)}, {"a/b": ("s", None)}])
def test_refuses_routes_without_a_secret_or_with_a_bad_name(routes: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        WebhookAdapter(routes)


def test_refuses_two_routes_sharing_one_secret_naming_both_not_the_secret() -> None:
    # A signature covers the timestamp and the body, not the route: the caller of either route could
    # post to the other, and sign reads of its turns and files.
    with pytest.raises(ValueError, match="'alerts' and 'reports' share one secret") as refused:
        WebhookAdapter({"alerts": (SECRET, None), "reports": (SECRET, "http://127.0.0.1:1/in")})
    assert SECRET not in str(refused.value)


# -- signing -----------------------------------------------------------------------


def test_sign_is_hmac_sha256_over_timestamp_dot_body() -> None:
    import hashlib
    import hmac

    expected = hmac.new(b"k", b"123.hello", hashlib.sha256).hexdigest()
    assert sign("k", "123", b"hello") == f"v1={expected}"
    assert get_payload("/webhooks/a/turns/t1") == b"GET /webhooks/a/turns/t1"


@pytest.mark.parametrize(
    ("timestamp", "signature", "reason"),
    [
        (None, "v1=" + "0" * 64, "missing timestamp"),
        (TS, None, "missing signature"),
        (TS, "", "missing signature"),
        ("12.5", "v1=" + "0" * 64, "malformed timestamp"),
        ("-5", "v1=" + "0" * 64, "malformed timestamp"),
        ("１２３", "v1=" + "0" * 64, "malformed timestamp"),
        (TS, "v0=" + "0" * 64, "unsupported signature scheme"),
        (TS, "sha256=" + "0" * 64, "unsupported signature scheme"),
        (TS, "v1=xyz", "malformed signature"),
        (TS, "v1=" + "0" * 64, "bad signature"),
    ],
)
def test_verify_names_the_reason(timestamp: str | None, signature: str | None, reason: str) -> None:
    assert verify("k", timestamp, signature, b"{}", now=NOW) == reason


def test_verify_accepts_upper_case_hex_and_checks_the_clock_both_ways() -> None:
    good = sign("k", TS, b"{}")
    assert verify("k", TS, good, b"{}", now=NOW) is None
    assert verify("k", TS, "v1=" + good[3:].upper(), b"{}", now=NOW) is None
    assert verify("k", TS, good, b"{}", now=NOW + 300) is None
    assert verify("k", TS, good, b"{}", now=NOW - 301) == "stale timestamp"
    assert verify("k", TS, good, b"{}", now=NOW + 301) == "stale timestamp"
    assert verify("other", TS, good, b"{}", now=NOW) == "bad signature"


# -- in: POST /webhooks/<route> ------------------------------------------------------


async def test_accepts_a_signed_message(base: str, sink: Sink) -> None:
    payload = {"text": "disk full on db-1", "chat_id": "ops", "user": "alertmanager"}
    reply = await signed_post(f"{base}/webhooks/alerts", SECRET, payload, timestamp=TS)
    assert reply.status == 202
    assert reply.json() == {"turn_id": "turn-1", "session": "webhook:alerts:ops", "duplicate": False}
    [inbound] = sink.inbound
    assert inbound.platform == "webhook"
    assert inbound.chat_id == "alerts:ops"
    assert inbound.thread_id is None
    assert (inbound.user_id, inbound.user_name) == ("alertmanager", "alertmanager")
    assert inbound.text == "disk full on db-1"
    assert inbound.is_private and not inbound.is_command
    assert len(inbound.event_id) == 64


async def test_defaults_numbers_and_commands(base: str, sink: Sink) -> None:
    await signed_post(f"{base}/webhooks/alerts", SECRET, {"text": "hi"}, timestamp=TS)
    await signed_post(f"{base}/webhooks/alerts", SECRET, {"text": "/stop", "chat_id": 42}, timestamp=TS)
    default, command = sink.inbound
    assert (default.chat_id, default.user_id, default.user_name) == ("alerts:default", "webhook:alerts", None)
    assert command.chat_id == "alerts:42" and command.is_command


@pytest.mark.parametrize(
    ("timestamp", "signature", "reason"),
    [
        (TS, "", "missing signature"),
        ("", None, "missing timestamp"),
        (TS, "v1=" + "ab" * 32, "bad signature"),
        ("yesterday", None, "malformed timestamp"),
        (str(int(NOW) - 301), None, "stale timestamp"),
        (str(int(NOW) + 301), None, "stale timestamp"),
    ],
)
async def test_rejects_unsigned_badly_signed_and_stale_requests(
    base: str, sink: Sink, timestamp: str, signature: str | None, reason: str
) -> None:
    reply = await signed_post(f"{base}/webhooks/alerts", SECRET, {"text": "x"}, timestamp=timestamp, signature=signature)
    assert reply.status == 401
    assert reply.json()["error"] == reason and set(reply.json()) == {"error", "detail"}
    assert SECRET not in reply.body.decode()
    assert sink.inbound == []


async def test_signature_with_another_routes_secret_is_refused(base: str, sink: Sink) -> None:
    reply = await signed_post(f"{base}/webhooks/alerts", OTHER_SECRET, {"text": "x"}, timestamp=TS)
    assert (reply.status, reply.json()["error"]) == (401, "bad signature")


async def test_accepts_a_timestamp_299_seconds_off(base: str, sink: Sink) -> None:
    for ts in (str(int(NOW) - 299), str(int(NOW) + 299)):
        reply = await signed_post(f"{base}/webhooks/alerts", SECRET, {"text": "x"}, timestamp=ts)
        assert reply.status == 202


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"{not json", "not valid UTF-8 JSON"),
        (b'{"text": "\xff"}', "not valid UTF-8 JSON"),
        (b'{"text": NaN}', "not valid UTF-8 JSON"),
        (b"[1, 2]", "JSON object"),
        (b'"text"', "JSON object"),
        (b"{}", '"text"'),
        (b'{"text": ""}', '"text"'),
        (b'{"text": "  "}', '"text"'),
        (b'{"text": 5}', '"text"'),
        (b'{"text": "x", "chat_id": true}', '"chat_id"'),
        (b'{"text": "x", "chat_id": {"a": 1}}', '"chat_id"'),
        (b'{"text": "x", "chat_id": ""}', '"chat_id"'),
        (b'{"text": "x", "chat_id": 1e400}', '"chat_id"'),
        (b'{"text": "x", "user": 7}', '"user"'),
        # Lone surrogates are not text: refused with the field named, never handed to the gateway.
        (b'{"text": "hi", "chat_id": "\\ud800"}', '"chat_id" is not valid Unicode'),
        (b'{"text": "hi \\udfff"}', '"text" is not valid Unicode'),
        (b'{"text": "hi", "user": "a\\udc80b"}', '"user" is not valid Unicode'),
        (b"[" * 100_000, "not valid UTF-8 JSON"),
        # Valid JSON that Python's int-string conversion limit will not read: said so, not "not JSON".
        (b'{"text": "x", "amount": ' + b"9" * 4301 + b"}", "a number too long to read (over 4300 digits)"),
    ],
)
async def test_rejects_malformed_payloads(base: str, sink: Sink, body: bytes, problem: str) -> None:
    reply = await signed_post(f"{base}/webhooks/alerts", SECRET, body, timestamp=TS)
    assert reply.status == 400
    assert problem in reply.json()["error"]
    assert sink.inbound == []


async def test_a_body_starting_with_a_byte_order_mark_is_the_json_after_it(base: str, sink: Sink) -> None:
    # Windows PowerShell's `Out-File -Encoding utf8` writes one; "not valid UTF-8 JSON" would send its
    # sender looking for a fault in JSON that has none. The signature covers the mark, as sent.
    body = codecs.BOM_UTF8 + body_of({"text": "disk full on db-1"})
    reply = await signed_post(f"{base}/webhooks/alerts", SECRET, body, timestamp=TS)
    assert reply.status == 202, reply.body
    assert [i.text for i in sink.inbound] == ["disk full on db-1"]


async def test_unknown_route_is_404_before_anything_else(base: str, sink: Sink) -> None:
    reply = await signed_post(f"{base}/webhooks/nope", SECRET, b"x" * (MAX_BODY + 1), timestamp=TS, signature="")
    assert reply.status == 404
    assert "nope" in reply.json()["error"]


async def test_body_over_one_mebibyte_is_413_and_exactly_one_is_accepted(base: str, sink: Sink) -> None:
    # Padded with a field of the caller's own: "text" has a bound of its own, far below the body's.
    over = b'{"text": "x", "pad": "' + b"x" * (MAX_BODY - 23) + b'"}'
    assert len(over) == MAX_BODY + 1
    reply = await signed_post(f"{base}/webhooks/alerts", SECRET, over, timestamp=TS)
    assert reply.status == 413
    exact = over[:-3] + over[-2:]
    assert len(exact) == MAX_BODY
    reply = await signed_post(f"{base}/webhooks/alerts", SECRET, exact, timestamp=TS)
    assert reply.status == 202
    assert sink.inbound[0].text == "x"


async def test_body_limit_holds_without_content_length(base: str, sink: Sink, http: aiohttp.ClientSession) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(20):
            yield b"x" * (64 * 1024)  # 1.25 MiB in all, chunked

    body = b"x" * (20 * 64 * 1024)
    headers = {TIMESTAMP_HEADER: TS, SIGNATURE_HEADER: sign(SECRET, TS, body)}
    try:
        async with http.post(f"{base}/webhooks/alerts", data=chunks(), headers=headers) as response:
            assert response.status == 413
    except aiohttp.ClientOSError:
        pass  # the server may answer and close while the client is still writing: refused either way
    assert sink.inbound == []


async def test_a_replay_is_the_same_event_and_the_sink_says_duplicate(base: str, sink: Sink) -> None:
    url, payload = f"{base}/webhooks/alerts", {"text": "deploy finished", "chat_id": "ci"}
    first = await signed_post(url, SECRET, payload, timestamp=TS)
    again = await signed_post(url, SECRET, payload, timestamp=TS)
    spelled = await signed_post(url, SECRET, payload, timestamp=TS,
                                signature="v1=" + sign(SECRET, TS, body_of(payload))[3:].upper())
    later = await signed_post(url, SECRET, payload, timestamp=str(int(NOW) + 1))
    assert [r.status for r in (first, again, spelled, later)] == [202] * 4
    assert first.json()["duplicate"] is False
    assert again.json() == spelled.json() == {**first.json(), "duplicate": True}
    assert later.json()["turn_id"] == "turn-2"  # signed anew: a new message, not a replay
    ids = [i.event_id for i in sink.inbound]
    assert ids[0] == ids[1] == ids[2] != ids[3]


async def test_same_body_on_two_routes_is_two_events(base: str, sink: Sink) -> None:
    await signed_post(f"{base}/webhooks/alerts", SECRET, {"text": "x"}, timestamp=TS)
    await signed_post(f"{base}/webhooks/reader", OTHER_SECRET, {"text": "x"}, timestamp=TS)
    assert sink.inbound[0].event_id != sink.inbound[1].event_id


async def test_not_started_or_stopped_answers_503(adapter: WebhookAdapter, base: str,
                                                  http: aiohttp.ClientSession) -> None:
    body = body_of({"text": "x"})
    headers = {TIMESTAMP_HEADER: TS, SIGNATURE_HEADER: sign(SECRET, TS, body)}
    async with http.post(f"{base}/webhooks/alerts", data=body, headers=headers) as reply:
        assert (reply.status, reply.headers.get("Retry-After")) == (503, "5")  # a restart's few seconds
    await adapter.start(Sink())
    await adapter.stop()
    async with http.post(f"{base}/webhooks/alerts", data=body, headers=headers) as reply:
        assert (reply.status, reply.headers.get("Retry-After")) == (503, "5")


async def test_a_request_whose_body_arrives_after_the_stop_answers_503(
    adapter: WebhookAdapter, base: str, sink: Sink, http: aiohttp.ClientSession
) -> None:
    body = body_of({"text": "late"})
    reading, rest = asyncio.Event(), asyncio.Event()

    async def chunks() -> AsyncIterator[bytes]:
        reading.set()  # asked for only after the 100 Continue: the request passed the early checks
        yield body[:5]
        await rest.wait()
        yield body[5:]

    headers = {TIMESTAMP_HEADER: TS, SIGNATURE_HEADER: sign(SECRET, TS, body)}
    posting = asyncio.ensure_future(http.post(f"{base}/webhooks/alerts", data=chunks(), headers=headers,
                                              expect100=True))
    await asyncio.wait_for(reading.wait(), 5)
    await adapter.stop()
    rest.set()
    async with await posting as response:
        assert response.status == 503  # the stop's answer: not a 500 from handing it to no gateway
        assert response.headers.get("Retry-After") == "5"
        assert "retry" in (await response.json())["error"]
    assert sink.inbound == []


async def test_a_failing_sink_answers_500(base: str, sink: Sink) -> None:
    sink.fail = True
    reply = await signed_post(f"{base}/webhooks/alerts", SECRET, {"text": "x"}, timestamp=TS)
    assert reply.status == 500
    assert "database" not in reply.body.decode()


async def test_a_sink_returning_none_still_answers_202(adapter: WebhookAdapter, base: str) -> None:
    async def drop(inbound: Inbound) -> None:
        return None

    await adapter.start(drop)
    reply = await signed_post(f"{base}/webhooks/alerts", SECRET, {"text": "x"}, timestamp=TS)
    assert (reply.status, reply.json()) == (202, {"turn_id": None, "session": None, "duplicate": False})


# -- out: deliveries to deliver_url ------------------------------------------------


def outbound(chat_id: str = "alerts:ops", **kw: Any) -> Outbound:
    fields: dict[str, Any] = {"text": "Disk cleaned.", "turn_id": "turn-9", "sequence": 1, "idempotency_key": "turn-9:1"}
    return Outbound(chat_id=chat_id, thread_id=None, **{**fields, **kw})


async def test_send_posts_signed_json_with_an_idempotency_key(
    adapter: WebhookAdapter, sink: Sink, receiver: WebhookReceiver
) -> None:
    sent = await adapter.send(outbound())
    assert sent.message_id == "turn-9:1"
    [delivery] = receiver.deliveries
    assert (delivery.status, delivery.reason) == (200, None)
    assert delivery.json == {"route": "alerts", "chat_id": "ops", "turn_id": "turn-9", "origin_turn_id": "turn-9",
                             "kind": "reply", "text": "Disk cleaned.", "sequence": 1}
    assert delivery.idempotency_key == "turn-9:1"
    assert delivery.headers["Content-Type"] == "application/json"
    assert delivery.headers[TIMESTAMP_HEADER] == TS
    assert delivery.headers[SIGNATURE_HEADER] == sign(SECRET, TS, delivery.body)


async def test_after_its_intake_stops_the_adapter_still_sends_until_it_is_closed(
    adapter: WebhookAdapter, sink: Sink, receiver: WebhookReceiver, base: str
) -> None:
    # The gateway's stop ends intake first and closes the session once its outbox is flushed: the reply of a
    # turn ending within the grace goes out, and no session is left open after the stop.
    await adapter.stop_within(0)
    reply = await signed_post(f"{base}/webhooks/alerts", SECRET, {"text": "x"}, timestamp=TS)
    assert reply.status == 503
    await adapter.send(outbound())
    assert [d.status for d in receiver.deliveries] == [200]
    session = adapter._session
    await adapter.close()
    assert session is not None and session.closed and adapter._session is None


async def test_default_chat_is_delivered_as_null_and_retries_dedupe_at_the_receiver(
    adapter: WebhookAdapter, sink: Sink, receiver: WebhookReceiver
) -> None:
    message = outbound("alerts:default", kind="completion")
    await adapter.send(message)
    await adapter.send(message)
    assert len(receiver.deliveries) == 2
    assert [d.duplicate for d in receiver.deliveries] == [False, True]
    assert receiver.payloads == [{"route": "alerts", "chat_id": None, "turn_id": "turn-9", "origin_turn_id": "turn-9",
                                  "kind": "completion", "text": "Disk cleaned.", "sequence": 1}]


async def test_chat_ids_with_colons_survive(adapter: WebhookAdapter, sink: Sink, receiver: WebhookReceiver) -> None:
    await adapter.send(outbound("alerts:team:ops"))
    assert receiver.payloads[0]["chat_id"] == "team:ops"


async def test_interim_messages_are_never_delivered(
    adapter: WebhookAdapter, sink: Sink, receiver: WebhookReceiver
) -> None:
    sent = await adapter.send(outbound(kind="interim"))
    assert sent.message_id == "turn-9:1"
    assert receiver.deliveries == []


async def test_a_missing_idempotency_key_gets_a_stable_one(
    adapter: WebhookAdapter, sink: Sink, receiver: WebhookReceiver
) -> None:
    first = await adapter.send(outbound(idempotency_key=None))
    second = await adapter.send(outbound(idempotency_key=None))
    assert first == second
    assert len(receiver.unique) == 1


@pytest.mark.parametrize("status", [500, 503, 429, 401, 408])  # final refusals: test_webhook_client_errors
async def test_non_2xx_raises_network_error_naming_the_status(
    adapter: WebhookAdapter, sink: Sink, receiver: WebhookReceiver, status: int
) -> None:
    receiver.fail_next(1, status=status)
    with pytest.raises(NetworkError, match=str(status)) as info:
        await adapter.send(outbound())
    assert SECRET not in str(info.value)
    assert info.value.chat_id == "alerts:ops"
    await adapter.send(outbound())  # the outbox's retry, same key
    assert [d.status for d in receiver.deliveries] == [status, 200]
    assert len(receiver.unique) == 1


async def test_a_dropped_connection_raises_network_error(
    adapter: WebhookAdapter, sink: Sink, receiver: WebhookReceiver
) -> None:
    receiver.drop_next()
    with pytest.raises(NetworkError) as info:
        await adapter.send(outbound())
    assert isinstance(info.value.__cause__, aiohttp.ClientError)


async def test_connection_refused_raises_network_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    adapter = WebhookAdapter({"alerts": (SECRET, f"http://127.0.0.1:{port}/hook?token=hidden")})
    await adapter.start(Sink())
    try:
        with pytest.raises(NetworkError) as info:
            await adapter.send(outbound())
        assert "hidden" not in str(info.value) and SECRET not in str(info.value)
    finally:
        await adapter.stop()


async def test_slow_receivers_time_out_and_redirects_are_not_followed() -> None:
    ended = asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        await ended.wait()  # never answers while the test runs; set at its end, its server stops at once
        return web.Response()

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect("/elsewhere")

    runner, url = await serve(web.post("/slow", slow), web.post("/moved", moved))
    adapter = WebhookAdapter({"slow": (SECRET, f"{url}/slow"), "moved": (OTHER_SECRET, f"{url}/moved")},
                             delivery_timeout=0.2)
    await adapter.start(Sink())
    try:
        with pytest.raises(NetworkError, match="TimeoutError"):  # bounded: a send waiting on would hang the test
            await asyncio.wait_for(adapter.send(outbound("slow:x")), 5)
        with pytest.raises(NetworkError, match="307"):
            await adapter.send(outbound("moved:x"))
    finally:
        ended.set()
        await adapter.stop()
        await runner.cleanup()


async def test_send_to_an_unknown_route_is_not_found(adapter: WebhookAdapter, sink: Sink) -> None:
    with pytest.raises(NotFound):
        await adapter.send(outbound("gone:ops"))


async def test_edit_is_unsupported_and_typing_does_nothing(adapter: WebhookAdapter) -> None:
    with pytest.raises(EditUnsupported):
        await adapter.edit("alerts:ops", None, "turn-9:1", "new text")
    await adapter.typing("alerts:ops", None)
    await adapter.idle("alerts:ops", None)


async def test_an_injected_session_is_left_open(receiver: WebhookReceiver, http: aiohttp.ClientSession) -> None:
    adapter = WebhookAdapter({"alerts": (SECRET, receiver.url)}, session=http, clock=lambda: NOW)
    await adapter.start(Sink())
    await adapter.send(outbound())
    await adapter.stop()
    await adapter.stop()
    assert not http.closed
    assert len(receiver.unique) == 1


# -- reading a route without deliver_url ---------------------------------------------


async def test_without_deliver_url_send_returns_at_once_and_get_reads_the_turn(
    adapter: WebhookAdapter, sink: Sink, base: str, reader: Reader, receiver: WebhookReceiver
) -> None:
    sent = await adapter.send(outbound("reader:ops", idempotency_key="turn-3:0"))
    assert sent.message_id == "turn-3:0"
    assert receiver.deliveries == []
    reply = await signed_get(f"{base}/webhooks/reader/turns/turn-3", OTHER_SECRET, timestamp=TS)
    assert reply.status == 200
    assert reply.json() == {"turn_id": "turn-3", "complete": True,
                            "messages": [{"route": "reader", "chat_id": "ops", "turn_id": "turn-3",
                                          "origin_turn_id": "turn-3", "kind": "reply",
                                          "text": "answer to turn-3", "sequence": 0}]}
    assert reader.calls == [("reader", "turn-3")]


async def test_get_needs_a_signature_for_that_very_path(base: str, sink: Sink, reader: Reader) -> None:
    url = f"{base}/webhooks/reader/turns/turn-3"
    bad = await signed_get(url, OTHER_SECRET, timestamp=TS, signature="v1=" + "0" * 64)
    missing = await signed_get(url, OTHER_SECRET, timestamp=TS, signature="")
    other_turn = sign(OTHER_SECRET, TS, get_payload("/webhooks/reader/turns/turn-4"))
    replayed = await signed_get(url, OTHER_SECRET, timestamp=TS, signature=other_turn)
    stale = await signed_get(url, OTHER_SECRET, timestamp=str(int(NOW) - 301))
    wrong_secret = await signed_get(url, SECRET, timestamp=TS)
    assert [r.status for r in (bad, missing, replayed, stale, wrong_secret)] == [401] * 5
    assert reader.calls == []


async def test_get_unknown_route_unknown_turn_and_no_reader(base: str, sink: Sink, receiver: WebhookReceiver) -> None:
    assert (await signed_get(f"{base}/webhooks/nope/turns/t", SECRET, timestamp=TS)).status == 404
    missing = await signed_get(f"{base}/webhooks/reader/turns/missing", OTHER_SECRET, timestamp=TS)
    assert (missing.status, missing.json()) == (404, {"error": "unknown turn 'missing'"})

    plain = WebhookAdapter({"reader": (OTHER_SECRET, None)}, clock=lambda: NOW)
    runner, url = await serve(*plain.web_routes())
    try:
        reply = await signed_get(f"{url}/webhooks/reader/turns/t", OTHER_SECRET, timestamp=TS)
        assert reply.status == 404
        assert "turn reads" in reply.json()["error"]
    finally:
        await runner.cleanup()
        await plain.stop()


# -- the receiver fake on its own ----------------------------------------------------


async def test_receiver_refuses_bad_signatures_and_missing_keys(receiver: WebhookReceiver) -> None:
    bad = await signed_post(receiver.url, "wrong", {"a": 1}, timestamp=TS, headers={"Idempotency-Key": "k"})
    keyless = await signed_post(receiver.url, SECRET, {"a": 1}, timestamp=TS)
    good = await signed_post(receiver.url, SECRET, {"a": 1}, timestamp=TS, headers={"Idempotency-Key": "k"})
    assert (bad.status, keyless.status, good.status) == (401, 400, 200)
    assert receiver.deliveries[0].reason == "bad signature"
    assert receiver.payloads == [{"a": 1}]
    assert await receiver.wait_for(lambda: len(receiver.deliveries) == 3)
    with pytest.raises(TimeoutError):
        await receiver.wait_for(lambda: False, timeout=0.05)
