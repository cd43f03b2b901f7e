"""A route with a ``deliver_url`` read by turn: each message says how its delivery went, so a caller whose
receiver was down for longer than ``retry_for_seconds`` learns what was given up on (no note is delivered
in its place) and can still fetch it, the file included."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import yaml

from gateway.app import Gateway
from gateway.config import config_from_mapping
from gateway.host import AgentHost
from gateway.platform_factory import build_adapters
from gateway.server import Server
from gateway.testing import settled
from platforms.fakes.webhook_receiver import WebhookReceiver, signed_get, signed_post

SECRET = "s3cret-for-delivery-reads"
DATA = b"alert,count\ndisk full,3\n"
SEND = {"tool_calls": [{"name": "send_file", "arguments": {"path": "alerts.csv", "caption": "the alerts"}}]}


@pytest.fixture
async def receiver() -> AsyncIterator[WebhookReceiver]:
    async with WebhookReceiver(SECRET) as r:
        yield r


@pytest.fixture
async def gateway(tmp_path: Path, receiver: WebhookReceiver) -> AsyncIterator[Callable[..., Awaitable[str]]]:
    (tmp_path / "state" / "workspace").mkdir(parents=True)
    (tmp_path / "state" / "workspace" / "alerts.csv").write_bytes(DATA)
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[SEND, {"text": "here it is"}]]}))
    running: list[tuple[Gateway, Server]] = []

    async def start(**webhook) -> str:
        routes = {"ci": {"secret": SECRET, "deliver_url": receiver.url}}
        config = config_from_mapping({
            "state_dir": str(tmp_path / "state"), "server": {"port": 0},
            "model": {"provider": "scripted", "script": str(script)},
            "platforms": {"webhook": {"enabled": True, "routes": routes, "toolsets": ["file"], **webhook}}}).config
        gateway = Gateway(AgentHost(config), build_adapters(config))
        server = Server(gateway, "127.0.0.1", 0)
        await gateway.start()
        await server.start()
        running.append((gateway, server))
        start.gateway = gateway
        return server.url

    yield start
    for gateway, server in running:
        await server.stop()
        await gateway.stop(grace=0)


async def read_until(url: str, done: Callable[[dict], bool]) -> dict:
    async with asyncio.timeout(15):
        while not done(read := (await signed_get(url, SECRET)).json()):
            await asyncio.sleep(0.02)  # polling, as a caller would
    return read


async def test_a_delivery_given_up_on_reads_as_failed_and_its_file_still_downloads(gateway, receiver) -> None:
    receiver.fail_next(10_000, 500)  # down for longer than retry_for_seconds
    base = await gateway(retry_for_seconds=0)
    accepted = (await signed_post(f"{base}/webhooks/ci", SECRET, {"text": "the alerts, please"})).json()
    url = f"{base}/webhooks/ci/turns/{accepted['turn_id']}"
    read = await read_until(url, lambda r: len(r["messages"]) == 2 and all(
        m["delivery"] != "pending" for m in r["messages"]))
    await settled(gateway.gateway)
    assert read["complete"] is True and receiver.unique == {}
    file, reply = read["messages"]
    assert [(m["kind"], m["text"], m["delivery"]) for m in (file, reply)] == [
        ("file", "the alerts", "failed"), ("reply", "here it is", "failed")]
    download = await signed_get(base + file["file"]["path"], SECRET)
    assert (download.status, download.body) == (200, DATA)


async def test_a_read_says_pending_while_the_receiver_holds_a_delivery_then_delivered(gateway, receiver) -> None:
    receiver.hold_next(1)  # the file's delivery: the reply waits behind it, in order
    base = await gateway()
    accepted = (await signed_post(f"{base}/webhooks/ci", SECRET, {"text": "the alerts, please"})).json()
    url = f"{base}/webhooks/ci/turns/{accepted['turn_id']}"
    await receiver.wait_for(lambda: receiver.deliveries, timeout=15)
    pending = await read_until(url, lambda r: r["messages"])
    assert [(m["kind"], m["delivery"]) for m in pending["messages"]] == [("reply", "pending")]
    receiver.heal()  # the held one is answered 503, then taken at its retry
    read = await read_until(url, lambda r: len(r["messages"]) == 2 and all(
        m["delivery"] == "delivered" for m in r["messages"]))
    assert [m["kind"] for m in read["messages"]] == ["file", "reply"]
    assert [{k: v for k, v in m.items() if k != "delivery"} for m in read["messages"]] == receiver.payloads
