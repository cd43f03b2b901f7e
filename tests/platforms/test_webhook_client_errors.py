"""A receiver's refusal of a delivery that it would refuse again, whatever the wait (405, 413, 415, 422,
as 410 already was), is final at once, through the real adapter and outbox: it was retried with backoff for
``retry_for_seconds`` (an hour by default), every later message of its chat waiting behind it. The log says so once,
at WARNING, with the route, the status and the start of the receiver's answer, never the route's secret. What may
pass (400, 401 and 403 while a secret is rotated, 404 while a receiver is deployed, 408, 409, 425, 429, 5xx) is
still retried."""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import NetworkError, NotFound, Outbound, RateLimited
from platforms.fakes.webhook_receiver import WebhookReceiver
from platforms.webhook import WebhookAdapter
from tests.platforms.test_webhook_adapter import serve

SECRET = "client-error-secret-0123456789"
NOW = 1_700_000_000.0
FINAL = [405, 410, 413, 415, 422]


@pytest.fixture
async def receiver() -> AsyncIterator[WebhookReceiver]:
    async with WebhookReceiver(SECRET, clock=lambda: NOW) as receiver:
        yield receiver


@pytest.fixture
async def adapter(receiver: WebhookReceiver) -> AsyncIterator[WebhookAdapter]:
    adapter = WebhookAdapter({"hook": (SECRET, receiver.url)}, clock=lambda: NOW)
    yield adapter
    await adapter.stop()


def message(key: str = "t1:reply:0") -> Outbound:
    return Outbound("hook:ops", None, "done", idempotency_key=key, turn_id="t1")


@pytest.mark.parametrize("status", FINAL)
async def test_a_refusal_for_good_is_final_naming_the_status_and_the_answer(
    adapter: WebhookAdapter, receiver: WebhookReceiver, status: int
) -> None:
    receiver.fail_next(1, status=status)
    with pytest.raises(NotFound) as info:
        await adapter.send(message())
    assert f"webhook route 'hook': deliver_url answered HTTP {status} (" in str(info.value)
    assert "not sent again" in str(info.value) and '{"error": "scripted failure"}' in str(info.value)
    assert info.value.chat_id == "hook:ops"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 408, 409, 425, 429, 500, 503])
async def test_what_may_pass_is_still_retried(adapter: WebhookAdapter, receiver: WebhookReceiver, status: int) -> None:
    receiver.fail_next(1, status=status)
    with pytest.raises(NetworkError):
        await adapter.send(message())
    await adapter.send(message())  # the outbox's retry, same key
    assert [d.status for d in receiver.deliveries] == [status, 200]


async def test_a_429_still_says_how_long_to_wait(adapter: WebhookAdapter, receiver: WebhookReceiver) -> None:
    receiver.fail_next(1, status=429, retry_after=7)
    with pytest.raises(RateLimited) as info:
        await adapter.send(message())
    assert info.value.retry_after == 7


@pytest.mark.parametrize(("body", "shown"), [
    # One line, control characters (a terminal's escapes) and invisible ones blanked, at most 200 characters.
    ("bad\r\n\x1b[31mfield\u200b  x", "bad [31mfield x"),
    ("y" * 5000, "y" * 200 + "…"),
    # The route's secret, echoed by a receiver, is masked, also cut in two by the end of what is read.
    (f"echo {SECRET} done", "echo *** done"),
    (" " * 780 + SECRET, "…"),
    # And the URL's path, which may carry a token too.
    ("no route for POST /hook?token=t0ken-t0ken", "no route for POST ***"),
    ("", None),
])
async def test_the_answer_is_quoted_short_on_one_line_and_never_with_the_secret(body: str, shown: str | None) -> None:
    async def refuse(request: web.Request) -> web.Response:
        return web.Response(status=422, text=body)

    runner, url = await serve(web.post("/hook", refuse))
    adapter = WebhookAdapter({"hook": (SECRET, f"{url}/hook?token=t0ken-t0ken")}, clock=lambda: NOW)
    try:
        with pytest.raises(NotFound) as info:
            await adapter.send(message())
    finally:
        await adapter.stop()
        await runner.cleanup()
    said = str(info.value).partition("not sent again")[2]
    assert SECRET[:8] not in str(info.value) and "t0ken" not in str(info.value)
    assert said == ("" if shown is None else f"; its answer: {shown}")


@pytest.mark.parametrize("status", [413, 422])
async def test_the_outbox_fails_it_at_once_warns_once_and_the_chat_goes_on(
    tmp_path, adapter: WebhookAdapter, receiver: WebhookReceiver, caplog: pytest.LogCaptureFixture, status: int
) -> None:
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"webhook": adapter}, max_retry_after=60.0, clock=clock, rng=random.Random(1))
    await outbox.start()
    caplog.set_level(logging.INFO)
    try:
        receiver.fail_next(1, status=status)
        outbox.enqueue("webhook", "hook:ops", None, "first", kind="reply", key="t1:reply", turn_id="t1")
        outbox.enqueue("webhook", "hook:ops", None, "second", kind="reply", key="t2:reply", turn_id="t2")
        assert await outbox.wait_sent("t1:reply:0", timeout=5.0) is None
        assert await outbox.wait_sent("t2:reply:0", timeout=5.0) is not None
        assert store.outbox.message("t1:reply:0").status == "failed"
    finally:
        await outbox.close()
        store.close()
    assert clock.sleeps == []  # no backoff: the second message went at once
    assert [(d.json["text"], d.status) for d in receiver.deliveries] == [("first", status), ("second", 200)]
    lines = [r for r in caplog.records if "t1:reply:0" in r.getMessage()]
    assert [r.levelno for r in lines] == [logging.WARNING]
    assert f"webhook route 'hook': deliver_url answered HTTP {status}" in lines[0].getMessage()
    assert "scripted failure" in lines[0].getMessage() and SECRET not in caplog.text
