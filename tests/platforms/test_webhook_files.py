"""Files the agent sends to a webhook route, over loopback HTTP without a gateway: the delivery a
receiver gets, the signed download and its refusals, a send tried again, how long a file is kept.

Through the gateway (send_file → the outbox → the receiver and the turn read) in
tests/scenarios/test_send_file_webhook.py; across a SIGKILL in tests/scenarios/test_send_file_restart.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from platforms.base import Accepted, Inbound, NetworkError, Outbound, SendsFiles, TurnRead
from platforms.fakes.webhook_receiver import WebhookReceiver, signed_get
from platforms.webhook import Route, WebhookAdapter
from platforms.webhook_files import KEEP_SECONDS, UPLOAD_LIMIT
from platforms.webhook_signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, get_payload, sign
from tests.platforms.outbox_copies import outbox_copy
from tests.web_client import serve

SECRET = "alerts-secret-0123456789"
READER_SECRET = "reader-secret-abcdef"
NOW = 1_700_000_000.0
NAME = "résumé – 東京; filename=x.html"  # never served as HTML: the gateway's origin holds the console
DATA = b"region,total\nnorth,12\n" + bytes(range(256))


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


async def accept(inbound: Inbound) -> Accepted:
    return Accepted(None, f"webhook:{inbound.chat_id}")


class Reader:
    """The gateway's turn read, as it gives a turn that sent a file and then answered."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, route: str, turn_id: str) -> TurnRead:
        return TurnRead([{**m, "turn_id": turn_id} for m in self.messages], complete=True)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def receiver(clock: Clock) -> AsyncIterator[WebhookReceiver]:
    async with WebhookReceiver(SECRET, clock=clock) as receiver:
        yield receiver


@pytest.fixture
async def served(tmp_path: Path, receiver: WebhookReceiver, clock: Clock) -> AsyncIterator[tuple[WebhookAdapter,
                                                                                                 str, Reader]]:
    reader = Reader()
    adapter = WebhookAdapter({"alerts": Route(SECRET, receiver.url), "reader": (READER_SECRET, None)},
                             turn_reader=reader, clock=clock, files_dir=tmp_path / "webhook-files")
    await adapter.start(accept)
    runner, url = await serve(adapter)
    yield adapter, url, reader
    await adapter.stop()
    await runner.cleanup()


def file_send(chat: str, caption: str = "", key: str = "t1:file:0:0") -> Outbound:
    """The outbox's file part: kind interim, like every send_file, the next of its turn."""
    return Outbound(chat, None, caption, kind="interim", idempotency_key=key, turn_id="t1", sequence=0)


async def get(base: str, path: str, secret: str, *, timestamp: str | None = None,
              signature: str | None = None) -> tuple[int, bytes, Any]:
    """A signed GET, read whole: status, body, headers."""
    timestamp = str(int(NOW)) if timestamp is None else timestamp
    headers = {TIMESTAMP_HEADER: timestamp,
               SIGNATURE_HEADER: signature or sign(secret, timestamp, get_payload(path))}
    async with aiohttp.ClientSession() as http, http.get(base + path, headers=headers) as response:
        return response.status, await response.read(), response.headers


def test_takes_files_up_to_a_documented_limit() -> None:
    adapter = WebhookAdapter({"a": ("s", None)})
    assert isinstance(adapter, SendsFiles)
    assert adapter.upload_limit("a:default") == UPLOAD_LIMIT == 100_000_000
    assert adapter.caption_limit == adapter.text_limit
    assert KEEP_SECONDS == 7 * 24 * 3600


async def test_a_file_is_delivered_signed_with_its_caption_and_downloads_its_exact_bytes_by_a_signed_get(
        served, receiver, tmp_path) -> None:
    adapter, base, _ = served
    file = outbox_copy(tmp_path, NAME, DATA)
    sent = await adapter.send_file(file_send("alerts:ops", "**Q3** totals"), file)
    os.unlink(file.path)  # the outbox removes its copy once the send is settled: the download outlives it
    [delivery] = receiver.deliveries
    assert delivery.reason is None and delivery.idempotency_key == "t1:file:0:0"
    body = delivery.json
    path = f"/webhooks/alerts/files/{sent.message_id}"
    assert body == {"route": "alerts", "chat_id": "ops", "turn_id": "t1", "origin_turn_id": "t1", "kind": "file",
                    "text": "**Q3** totals", "sequence": 0,
                    "file": {"id": sent.message_id, "name": NAME, "size": len(DATA),
                             "content_type": "application/octet-stream", "path": path}}
    status, data, headers = await get(base, path, SECRET)
    assert (status, data) == (200, DATA)
    assert headers["Content-Type"] == "application/octet-stream"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Cache-Control"] == "private, no-store"
    assert headers["Content-Length"] == str(len(DATA))
    disposition = headers["Content-Disposition"]
    assert disposition.isascii() and disposition.count(";") == 2  # the name's own ";" starts no parameter
    assert disposition.endswith("filename*=UTF-8''r%C3%A9sum%C3%A9%20%E2%80%93%20%E6%9D%B1%E4%BA%AC%3B%20"
                                "filename%3Dx.html")  # RFC 5987: the exact name


async def test_a_csv_says_so(served, receiver, tmp_path) -> None:
    adapter, base, _ = served
    sent = await adapter.send_file(file_send("alerts:default"), outbox_copy(tmp_path, "alerts.csv", b"a,b\n"))
    assert receiver.payloads[0]["file"]["content_type"] == "text/csv"
    assert receiver.payloads[0]["chat_id"] is None
    status, _, headers = await get(base, f"/webhooks/alerts/files/{sent.message_id}", SECRET)
    assert (status, headers["Content-Type"]) == (200, "text/csv")


async def test_the_download_is_refused_as_the_turn_read_is(served, tmp_path, clock) -> None:
    adapter, base, _ = served
    sent = await adapter.send_file(file_send("alerts:ops"), outbox_copy(tmp_path, "a.csv", b"for alerts only"))
    path = f"/webhooks/alerts/files/{sent.message_id}"
    stale = str(int(NOW) - 301)
    for answer, error in [(await get(base, path, "wrong"), "bad signature"),
                          (await get(base, path, SECRET, timestamp=stale), "stale timestamp")]:
        assert (answer[0], json.loads(answer[1])["error"]) == (401, error)
    missing = await signed_get(base + path, SECRET, signature="")
    assert (missing.status, missing.json()["error"]) == (401, "missing signature")
    other = f"/webhooks/alerts/files/{'A' * 24}"  # a signature for one file is no good for another
    assert (await get(base, path, SECRET, signature=sign(SECRET, str(int(NOW)), get_payload(other))))[0] == 401
    assert (await get(base, f"/webhooks/nope/files/{sent.message_id}", SECRET))[:2] == (
        404, b'{"error": "unknown route \'nope\'"}')
    for route, secret, file_id in (("reader", READER_SECRET, sent.message_id),  # another route's file
                                   ("alerts", SECRET, "A" * 24), ("alerts", SECRET, "short")):
        status, body, _ = await get(base, f"/webhooks/{route}/files/{file_id}", secret)
        assert (status, body) == (404, f'{{"error": "unknown file {file_id!r}"}}'.encode()), route
    clock.now += KEEP_SECONDS
    status, body, _ = await get(base, path, SECRET, timestamp=str(int(clock.now)))
    assert (status, body) == (404, f'{{"error": "unknown file {sent.message_id!r}"}}'.encode())
    assert adapter.files.sweep() == 1
    assert [p.name for p in (tmp_path / "webhook-files").iterdir()] == [".id-key"]  # the ids' key stays


async def test_a_send_tried_again_keeps_one_file_and_announces_the_same_download(
        served, receiver, tmp_path) -> None:
    adapter, base, _ = served
    receiver.fail_next(1, 500)  # stored by a receiver that then failed: the answer is lost
    with pytest.raises(NetworkError):
        await adapter.send_file(file_send("alerts:ops"), outbox_copy(tmp_path, "a.csv", b"once"))
    sent = await adapter.send_file(file_send("alerts:ops"), outbox_copy(tmp_path, "a.csv", b"once"))
    first, second = (d.json for d in receiver.deliveries)
    assert first == second and first["file"]["id"] == sent.message_id
    assert {p.name for p in (tmp_path / "webhook-files").iterdir()} == {".id-key", sent.message_id}
    other = await adapter.send_file(file_send("alerts:ops", key="t1:file:1:0"), outbox_copy(tmp_path, "a.csv", b"x"))
    assert other.message_id != sent.message_id  # the turn's next file is another download


async def test_a_route_without_deliver_url_keeps_the_file_for_the_turn_read(served, receiver, tmp_path) -> None:
    adapter, base, reader = served
    sent = await adapter.send_file(file_send("reader:ops", "the report"), outbox_copy(tmp_path, "r.csv", DATA))
    assert receiver.deliveries == []
    reader.messages = [
        {"chat_id": "reader:ops", "kind": "interim", "op": "file", "text": "the report", "sequence": 0,
         "status": "sent", "message_id": sent.message_id},
        {"chat_id": "reader:ops", "kind": "interim", "op": "file", "text": "not kept yet", "sequence": 1,
         "status": "pending", "message_id": None},
        {"chat_id": "reader:ops", "kind": "reply", "op": "send", "text": "done", "sequence": 2, "status": "sent",
         "message_id": "t1:reply:0"}]  # fmt: skip
    status, body, _ = await get(base, "/webhooks/reader/turns/t1", READER_SECRET)
    assert status == 200
    path = f"/webhooks/reader/files/{sent.message_id}"
    assert json.loads(body)["messages"] == [
        {"route": "reader", "chat_id": "ops", "turn_id": "t1", "origin_turn_id": "t1", "kind": "file",
         "text": "the report", "sequence": 0,
         "file": {"id": sent.message_id, "name": "r.csv", "size": len(DATA), "content_type": "text/csv",
                  "path": path}},
        {"route": "reader", "chat_id": "ops", "turn_id": "t1", "origin_turn_id": "t1", "kind": "reply", "text": "done",
         "sequence": 2}]
    assert (await get(base, path, READER_SECRET))[:2] == (200, DATA)
    assert (await get(base, path, SECRET))[0] == 401  # the alerts route's secret is not this route's


async def test_a_file_that_cannot_be_kept_is_a_network_error_the_outbox_retries(served, receiver, tmp_path) -> None:
    adapter, _, _ = served
    (tmp_path / "webhook-files").write_text("in the way")  # a full disk, say: nothing can be written there
    with pytest.raises(NetworkError, match="webhook route 'alerts': cannot keep the file"):
        await adapter.send_file(file_send("alerts:ops"), outbox_copy(tmp_path, "a.txt", b"a"))
    assert receiver.deliveries == []
