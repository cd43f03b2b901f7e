"""What a webhook caller is told when refused: each 401 keeps its documented ``error`` and says in ``detail``
what to fix; a route rotating its secret takes requests signed with either; ``text`` has the web chat's bound."""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from platforms.base import Accepted, Inbound, Outbound
from platforms.fakes.webhook_receiver import WebhookReceiver, signed_get, signed_post
from platforms.web import MAX_TEXT
from platforms.webhook import Route, WebhookAdapter
from platforms.webhook_signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

SECRET = "new-secret-0123456789abcdef"
OLD = "old-secret-fedcba9876543210"
OTHER = "other-route-secret-424242"
NOW = 1_700_000_000.0
TS = str(int(NOW))


class Sink:
    def __init__(self) -> None:
        self.texts: list[str] = []

    async def __call__(self, inbound: Inbound) -> Accepted:
        self.texts.append(inbound.text)
        return Accepted(f"turn-{len(self.texts)}", f"webhook:{inbound.chat_id}")


@pytest.fixture
async def receiver() -> AsyncIterator[WebhookReceiver]:
    async with WebhookReceiver(SECRET, clock=lambda: NOW) as receiver:
        yield receiver


@pytest.fixture
async def served(receiver: WebhookReceiver) -> AsyncIterator[tuple[WebhookAdapter, Sink, str]]:
    adapter = WebhookAdapter({"alerts": Route(SECRET, receiver.url, previous_secret=OLD), "plain": (OTHER, None)},
                             clock=lambda: NOW)
    sink = Sink()
    await adapter.start(sink)
    app = web.Application()
    app.add_routes(adapter.web_routes())
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield adapter, sink, f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()
    await adapter.stop()


async def post(base: str, *, route: str = "alerts", secret: str = SECRET, **kwargs) -> tuple[int, dict]:
    reply = await signed_post(f"{base}/webhooks/{route}", secret, kwargs.pop("payload", {"text": "hi"}), **kwargs)
    return reply.status, reply.json()


# -- detail ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("timestamp", "signature", "error", "told"), [
    ("", None, "missing timestamp", "send X-Switchboard-Timestamp: the time the request was signed, in whole Unix"
                                    " seconds (this server's clock reads 1700000000)"),
    (TS, "", "missing signature", 'send X-Switchboard-Signature: v1= and the 64 hex digits of HMAC-SHA256, keyed'
                                  ' with the route\'s secret, of the timestamp as sent, "." and the body'),
    ("1700000000.5", None, "malformed timestamp", "X-Switchboard-Timestamp must be Unix seconds as an integer: ASCII"
                                                  " digits only, at most 15, no sign, no fraction (this server's"
                                                  " clock reads 1700000000)"),
    (TS, "sha256=" + "0" * 64, "unsupported signature scheme",
     "X-Switchboard-Signature must be v1=<64 hex digits>: v1 is the only scheme (a bare digest needs v1= before it)"),
    (TS, "v1=" + "A" * 44, "malformed signature",
     "X-Switchboard-Signature must be v1= then the 64 hex digits of the HMAC-SHA256 digest (hex, not base64); 44"
     " characters came after v1="),
    (TS, "v1=" + "0" * 64, "bad signature", 'X-Switchboard-Signature does not match v1= and the 64 hex digits of'
                                            ' HMAC-SHA256, keyed with the route\'s secret, of the timestamp as sent,'
                                            ' "." and the 14 bytes of the body as received: check the secret, and'
                                            ' sign the exact bytes sent'),
    (str(int(NOW) - 412), None, "stale timestamp", "X-Switchboard-Timestamp is 412 s behind this server's clock; at"
                                                   " most 300 s either way is accepted: check the sender's clock"
                                                   " (NTP)"),
    (str(int(NOW) + 301), None, "stale timestamp", "X-Switchboard-Timestamp is 301 s ahead of this server's clock;"
                                                   " at most 300 s either way is accepted: check the sender's clock"
                                                   " (NTP)"),
    (str(int(NOW) * 1000 + 123), None, "stale timestamp",
     f"X-Switchboard-Timestamp is {int(NOW) * 999 + 123} s ahead of this server's clock; at most 300 s either way is"
     " accepted: check the sender's clock (NTP); it looks like milliseconds: send whole seconds"),
])
async def test_each_401_keeps_its_error_and_says_what_to_fix(served, timestamp, signature, error, told) -> None:
    _, sink, base = served
    status, answer = await post(base, timestamp=timestamp, signature=signature)
    assert (status, answer) == (401, {"error": error, "detail": told})
    assert SECRET not in json.dumps(answer) and OLD not in json.dumps(answer)
    assert sink.texts == []


async def test_a_bad_signature_never_shows_the_one_expected(served) -> None:
    _, _, base = served
    body = json.dumps({"text": "hi"}).encode()
    status, answer = await post(base, payload=body, timestamp=TS, signature=sign("a guess", TS, body))
    assert status == 401
    for secret in (SECRET, OLD):
        assert sign(secret, TS, body).partition("=")[2] not in json.dumps(answer).lower()


async def test_a_gzipped_body_is_counted_as_decoded(served) -> None:
    _, _, base = served
    body = json.dumps({"text": "hi"}).encode()
    signed = {TIMESTAMP_HEADER: TS, SIGNATURE_HEADER: sign("wrong", TS, body), "Content-Encoding": "gzip"}
    reply = await signed_post(f"{base}/webhooks/alerts", SECRET, gzip.compress(body), headers=signed)
    assert "the 14 bytes of the body as received (once gzip-decoded)" in reply.json()["detail"]


async def test_a_refused_read_names_the_path_it_was_checked_against(served) -> None:
    _, _, base = served
    reply = await signed_get(f"{base}/webhooks/plain/turns/t%201?x=1", "wrong", timestamp=TS)
    assert reply.status == 401 and reply.json()["error"] == "bad signature"
    assert '"." and "GET /webhooks/plain/turns/t%201", the path as this server received it' in reply.json()["detail"]


async def test_a_delivery_sent_back_is_refused_as_before(served, receiver) -> None:
    adapter, sink, base = served
    await adapter.send(Outbound(chat_id="alerts:ops", thread_id=None, text="the answer", turn_id="turn-1",
                                sequence=0, kind="reply", idempotency_key="turn-1:0"))
    (delivery,) = receiver.unique.values()
    status, answer = await post(base, payload=delivery.body, timestamp=delivery.headers[TIMESTAMP_HEADER],
                                signature=delivery.headers[SIGNATURE_HEADER])
    assert (status, answer) == (401, {"error": "a delivery of this route sent back, not a request to it"})


# -- rotating a route's secret --------------------------------------------------------------------------


async def test_requests_signed_with_the_secret_or_the_previous_one_are_taken(served) -> None:
    _, sink, base = served
    assert (await post(base, payload={"text": "new"}, timestamp=TS))[0] == 202
    assert (await post(base, secret=OLD, payload={"text": "old"}, timestamp=TS))[0] == 202
    assert sink.texts == ["new", "old"]
    assert await post(base, secret="neither", timestamp=TS) == (401, {"error": "bad signature", "detail": (
        'X-Switchboard-Signature does not match v1= and the 64 hex digits of HMAC-SHA256, keyed with the route\'s'
        ' secret, of the timestamp as sent, "." and the 14 bytes of the body as received: check the secret, and'
        ' sign the exact bytes sent')})


async def test_the_previous_secret_is_held_to_the_clock_too(served) -> None:
    _, sink, base = served
    status, answer = await post(base, secret=OLD, timestamp=str(int(NOW) - 301))
    assert (status, answer["error"]) == (401, "stale timestamp")
    assert sink.texts == []


async def test_deliveries_are_signed_with_the_new_secret_only(served, receiver) -> None:
    adapter, _, _ = served
    await adapter.send(Outbound(chat_id="alerts:ops", thread_id=None, text="x", turn_id="turn-1", sequence=0,
                                kind="reply", idempotency_key="turn-1:0"))
    (delivery,) = receiver.deliveries
    assert delivery.headers[SIGNATURE_HEADER] == sign(SECRET, delivery.headers[TIMESTAMP_HEADER], delivery.body)


async def test_a_read_may_be_signed_with_the_previous_secret(served) -> None:
    _, _, base = served
    reply = await signed_get(f"{base}/webhooks/alerts/turns/t1", OLD, timestamp=TS)
    assert reply.status == 404  # past the signature: this adapter has no turn reader


def test_routes_from_config_objects_carry_the_previous_secret_hidden_from_their_repr() -> None:
    class Setting:
        secret, deliver_url, previous_secret = SECRET, None, OLD

    adapter = WebhookAdapter({"a": Setting(), "b": (OTHER, None, None)})
    assert adapter.routes == {"a": Route(SECRET, None, OLD), "b": Route(OTHER, None)}
    assert OLD not in repr(adapter.routes["a"])


@pytest.mark.parametrize("routes", [
    {"a": (SECRET, None, OLD), "b": (OLD, None)},
    {"a": (SECRET, None), "b": (OTHER, None, SECRET)},
    {"a": (SECRET, None, OLD), "b": (OTHER, None, OLD)},
])
def test_a_previous_secret_may_not_be_another_routes_secret(routes) -> None:
    with pytest.raises(ValueError, match="'a' and 'b' share one secret") as refused:
        WebhookAdapter(routes)
    assert not any(secret in str(refused.value) for secret in (SECRET, OLD, OTHER))


# -- the bound on text ----------------------------------------------------------------------------------


async def test_text_is_bounded_as_the_web_chats_is(served) -> None:
    _, sink, base = served
    assert (await post(base, payload={"text": "x" * MAX_TEXT}, timestamp=TS))[0] == 202
    status, answer = await post(base, payload={"text": "y" * (MAX_TEXT + 1)}, timestamp=TS)
    assert (status, answer) == (400, {"error": '"text" must be at most 32000 characters'})
    assert sink.texts == ["x" * MAX_TEXT]


async def test_the_log_says_while_requests_come_signed_with_the_previous_secret(served, caplog) -> None:
    _, _, base = served
    caplog.set_level(logging.INFO, logger="platforms.webhook")
    await post(base, payload={"text": "new"}, timestamp=TS)
    assert "previous_secret" not in caplog.text
    for n in range(3):
        assert (await post(base, secret=OLD, payload={"text": f"old {n}"}, timestamp=TS))[0] == 202
    said = [r.getMessage() for r in caplog.records if "previous_secret" in r.getMessage()]
    assert said == ["webhook route 'alerts': a request signed with its previous_secret was taken; remove"
                    " previous_secret once the caller signs with secret"]
    assert OLD not in caplog.text and SECRET not in caplog.text
