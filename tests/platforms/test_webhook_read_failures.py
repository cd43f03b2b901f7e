"""A webhook route's signed turn read when the gateway's store fails to read the turn: a JSON 500,
as every answer of the route is, that names nothing of the store."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from platforms.base import Accepted, Inbound, TurnRead
from platforms.fakes.webhook_receiver import signed_get
from platforms.webhook import Route, WebhookAdapter
from tests.web_client import serve

SECRET = "read-failures-s3cret"


async def sink(inbound: Inbound) -> Accepted:
    return Accepted("turn-1", "webhook|r:default|", False)


async def broken_reader(route: str, turn_id: str) -> TurnRead:
    raise OSError(5, "Input/output error: /srv/switchboard/state/gateway.sqlite3")


@pytest.fixture
async def base(tmp_path) -> AsyncIterator[str]:
    adapter = WebhookAdapter({"r": Route(SECRET)}, turn_reader=broken_reader, files_dir=tmp_path / "files")
    await adapter.start(sink)
    runner, url = await serve(adapter)
    yield url
    await runner.cleanup()
    await adapter.stop()


async def test_a_turn_the_store_fails_to_read_is_a_json_500_naming_nothing_of_the_store(base, caplog) -> None:
    caplog.set_level(logging.INFO)
    reply = await signed_get(f"{base}/webhooks/r/turns/turn-1", SECRET)
    assert reply.status == 500
    assert reply.json() == {"error": "internal error; retry later"}
    assert "reading turn 'turn-1' failed" in caplog.text


async def test_an_unsigned_read_is_still_refused_before_the_store_is_asked(base) -> None:
    reply = await signed_get(f"{base}/webhooks/r/turns/turn-1", "another secret")
    assert reply.status == 401 and reply.json()["error"] == "bad signature"
