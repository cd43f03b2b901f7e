"""``send_file`` through webhook routes, end to end over HTTP: the model's file goes through the
outbox to the route's receiver (or into the turn read) as a ``file`` message in the turn's order,
and its signed download serves the bytes the model sent after the outbox's copy is gone."""

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
from tests.polling import until

SECRET = "s3cret-for-tests"
DATA = b"alert,count\ndisk full,3\n" + bytes(range(256))
SEND = {"tool_calls": [{"name": "send_file", "arguments": {"path": "last week.csv", "caption": "last week's alerts"}}]}


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[Callable[[dict], Awaitable[tuple[Gateway, str]]]]:
    (tmp_path / "state" / "workspace").mkdir(parents=True)
    (tmp_path / "state" / "workspace" / "last week.csv").write_bytes(DATA)
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[SEND, {"text": "here it is"}]]}))
    running: list[tuple[Gateway, Server]] = []

    async def start(routes: dict) -> tuple[Gateway, str]:
        config = config_from_mapping({
            "state_dir": str(tmp_path / "state"), "server": {"port": 0},
            "model": {"provider": "scripted", "script": str(script)},
            "platforms": {"webhook": {"enabled": True, "routes": routes, "toolsets": ["file"]}}}).config
        gateway = Gateway(AgentHost(config), build_adapters(config))
        server = Server(gateway, "127.0.0.1", 0)
        await gateway.start()
        await server.start()
        running.append((gateway, server))
        return gateway, server.url

    yield start
    for gateway, server in running:
        await server.stop()
        await gateway.stop(grace=0)


async def test_a_file_reaches_the_receiver_before_the_answer_and_downloads_as_sent(gateway, tmp_path) -> None:
    async with WebhookReceiver(SECRET) as receiver:
        running, base = await gateway({"alerts": {"secret": SECRET, "deliver_url": receiver.url}})
        accepted = (await signed_post(f"{base}/webhooks/alerts", SECRET,
                                      {"text": "make me a CSV of last week's alerts", "chat_id": "ops"})).json()
        await receiver.wait_for(lambda: len(receiver.unique) == 2)
        await settled(running)
    file, reply = receiver.payloads
    assert all(d.reason is None for d in receiver.deliveries)
    assert (file["kind"], file["text"], file["turn_id"], file["sequence"]) == (
        "file", "last week's alerts", accepted["turn_id"], 0)
    assert (reply["kind"], reply["text"], reply["turn_id"], reply["sequence"]) == (
        "reply", "here it is", accepted["turn_id"], 1)
    assert {k: file["file"][k] for k in ("name", "size", "content_type")} == {
        "name": "last week.csv", "size": len(DATA), "content_type": "text/csv"}
    assert file["file"]["path"] == f"/webhooks/alerts/files/{file['file']['id']}"
    assert list((tmp_path / "state" / "outbox-files").iterdir()) == []  # the outbox's copy went
    (tmp_path / "state" / "workspace" / "last week.csv").write_bytes(b"changed afterwards")
    download = await signed_get(base + file["file"]["path"], SECRET)
    assert (download.status, download.body) == (200, DATA)
    assert (await signed_get(base + file["file"]["path"], "wrong")).status == 401


async def test_without_a_deliver_url_the_turn_read_carries_the_file_until_complete(gateway) -> None:
    running, base = await gateway({"reports": {"secret": SECRET}})
    accepted = (await signed_post(f"{base}/webhooks/reports", SECRET, {"text": "the CSV please"})).json()
    turn = f"{base}/webhooks/reports/turns/{accepted['turn_id']}"
    async with asyncio.timeout(10):
        while not (read := (await signed_get(turn, SECRET)).json())["complete"]:
            await asyncio.sleep(0.02)
    file, reply = read["messages"]
    assert (file["kind"], file["text"], file["chat_id"], file["sequence"]) == ("file", "last week's alerts", None, 0)
    assert (reply["kind"], reply["text"], reply["sequence"]) == ("reply", "here it is", 1)
    assert (file["file"]["name"], file["file"]["size"]) == ("last week.csv", len(DATA))
    download = await signed_get(base + file["file"]["path"], SECRET)
    assert (download.status, download.body) == (200, DATA)
    await settled(running)


async def test_a_turn_read_is_not_complete_while_its_file_waits_to_be_kept(gateway, tmp_path) -> None:
    blocker = tmp_path / "state" / "webhook-files"
    blocker.write_text("in the way")  # a full disk, say: the file cannot be kept yet, the outbox retries
    running, base = await gateway({"reports": {"secret": SECRET}})
    accepted = (await signed_post(f"{base}/webhooks/reports", SECRET, {"text": "the CSV please"})).json()
    turn = f"{base}/webhooks/reports/turns/{accepted['turn_id']}"
    inbox = running.store.inbox
    event_id = inbox.event_of_turn("webhook", accepted["turn_id"]).event_id
    await until(lambda: inbox.settled("webhook", event_id))  # the turn has ended: its answer is journaled after the file
    read = (await signed_get(turn, SECRET)).json()
    assert read["complete"] is False  # the file is still to come
    assert [m["kind"] for m in read["messages"]] == ["reply"]
    blocker.unlink()
    async with asyncio.timeout(10):
        while not (read := (await signed_get(turn, SECRET)).json())["complete"]:
            await asyncio.sleep(0.05)
    assert [m["kind"] for m in read["messages"]] == ["file", "reply"]
