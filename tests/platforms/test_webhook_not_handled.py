"""The webhook platform when the gateway fails on a request's message before recording it. A fault the
message trips (which would fail alike at every try) is a final 422 with `NOT_HANDLED_MESSAGE`: answered
500 ("retry the same request"), a caller that retries did so for as long as it retries, each time in vain.
A refusal of the store (a full disk) stays a 500, for the caller to send it again: nothing is lost."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator

import pytest

from platforms.base import Accepted, Inbound
from platforms.fakes.webhook_receiver import signed_post
from platforms.not_recorded import NOT_HANDLED_MESSAGE
from platforms.webhook import Route, WebhookAdapter
from tests.sqlite_errors import full_disk
from tests.web_client import serve

SECRET = "alerts-secret-0123456789"


class Failing:
    """The gateway: fails on the texts in `bugs` (a fault they trip) and, while `full`, on every message for
    want of room; takes the rest."""

    def __init__(self) -> None:
        self.bugs: set[str] = set()
        self.full = False
        self.taken: list[str] = []

    async def __call__(self, inbound: Inbound) -> Accepted:
        if inbound.text in self.bugs:
            raise KeyError("a fault this message trips")
        if self.full:
            raise full_disk()
        self.taken.append(inbound.text)
        return Accepted(f"turn-{len(self.taken)}", f"webhook:{inbound.chat_id}")


@pytest.fixture
async def served() -> AsyncIterator[tuple[Failing, str]]:
    sink = Failing()
    adapter = WebhookAdapter({"alerts": Route(SECRET)})
    await adapter.start(sink)
    runner, base = await serve(adapter)
    yield sink, base
    await adapter.stop()
    await runner.cleanup()


async def test_a_message_the_gateway_fails_on_is_a_final_422_saying_so(served, caplog) -> None:
    sink, base = served
    sink.bugs.add("odd")
    reply = await signed_post(f"{base}/webhooks/alerts", SECRET, {"text": "odd"})
    assert reply.status == 422 and 400 <= reply.status < 500  # final: not to be sent again
    assert json.loads(reply.body) == {"error": NOT_HANDLED_MESSAGE}
    reply = await signed_post(f"{base}/webhooks/alerts", SECRET, {"text": "next"})
    assert reply.status == 202
    assert sink.taken == ["next"]
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None  # the traceback, for the operator


async def test_a_store_that_cannot_record_the_message_is_still_a_500_to_send_again(served) -> None:
    sink, base = served
    sink.full = True
    now = str(int(time.time()))
    reply = await signed_post(f"{base}/webhooks/alerts", SECRET, {"text": "hello"}, timestamp=now)
    assert reply.status == 500
    assert json.loads(reply.body) == {"error": "internal error; retry the same request"}
    sink.full = False
    reply = await signed_post(f"{base}/webhooks/alerts", SECRET, {"text": "hello"}, timestamp=now)  # the same
    assert reply.status == 202
    assert sink.taken == ["hello"]
