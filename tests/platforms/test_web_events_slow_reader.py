"""A page that reads its event stream slower than the chat speaks (a phone on a bad network) falls more than
``MAX_QUEUED`` events behind: its stream is cut (what it had queued dropped, the connection closed once what
was written is read), and reconnecting with the newest message it holds (``Last-Event-ID``) it gets every
reply it missed from the durable history, then the live ones: each reply once, in order. Over a loopback
socket whose receive buffer is small, as a slow network's window is; the adapter alone."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from platforms.base import Outbound
from platforms.web import WebChatAdapter
from platforms.web_events import MAX_QUEUED
from tests.web_client import Intake, serve

REPLIES = 2 * MAX_QUEUED
TEXT = 8_000
"""Characters a reply: 2,000 of them are 16 MB, far more than the sockets' buffers take in (4 MB at most)."""


def said(n: int) -> dict[str, Any]:
    return {"id": f"m{n}", "role": "assistant", "kind": "reply", "text": f"{n} " + "r" * TEXT, "time": float(n),
            "edited": False}


@pytest.fixture
async def served(tmp_path) -> AsyncIterator[tuple[WebChatAdapter, Intake, int]]:
    intake = Intake()
    adapter = WebChatAdapter(history_reader=intake.history, files_dir=tmp_path / "files")
    await adapter.start(intake.take)
    runner, _ = await serve(adapter)
    yield adapter, intake, runner.addresses[0][1]
    await adapter.stop()
    await runner.cleanup()


async def open_stream(port: int, *, last_event_id: str | None = None, receive_buffer: int | None = None,
                      limit: int = 2**16) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The chat's events over HTTP/1.0 (the server closes the connection at the stream's end), read past the
    headers. ``limit``: bytes the reader holds before it stops reading the socket (and the longest line)."""
    sock = socket.socket()
    if receive_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=limit)
    resume = f"Last-Event-ID: {last_event_id}\r\n" if last_event_id is not None else ""
    writer.write(f"GET /chat/api/events?chat=c1 HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n{resume}\r\n".encode())
    status = await reader.readline()
    assert status.split()[1] == b"200", status
    while await reader.readline() != b"\r\n":
        pass
    return reader, writer


async def next_event(reader: asyncio.StreamReader) -> tuple[str, dict[str, Any]] | None:
    """The next event as ``(type, data)``, comments skipped; None once the server closed the stream."""
    fields: dict[str, str] = {}
    while line := (await reader.readline()).decode():
        line = line.rstrip("\n")
        if not line:
            if "data" in fields:
                return fields["event"], json.loads(fields["data"])
            continue
        if not line.startswith(":"):
            field, _, value = line.partition(": ")
            fields[field] = value
    return None


async def test_a_page_too_slow_for_the_chat_is_cut_off_and_gets_every_reply_once_in_order_on_reconnect(
        served) -> None:
    adapter, intake, port = served
    slow, slow_writer = await open_stream(port, receive_buffer=64 * 1024)
    assert await next_event(slow) == ("history", {"messages": [], "commands": [], "working": False})
    for n in range(REPLIES):  # the page reads nothing meanwhile
        await adapter.send(Outbound(chat_id="c1", thread_id=None, text=said(n)["text"], idempotency_key=f"m{n}"))
        intake.messages.append(said(n))  # recorded as sent once the send returns, as the outbox does
        await asyncio.sleep(0.001)  # a chat's pace, far above a page's: the stream writes what the socket takes
    seen = []
    async with asyncio.timeout(30):
        while (event := await next_event(slow)) is not None:  # what reached the page before it was cut off
            assert event[0] == "message"
            seen.append(event[1]["id"])
    assert seen == [f"m{n}" for n in range(len(seen))]
    assert 0 < len(seen) < REPLIES - MAX_QUEUED  # cut off: the rest never came on this stream
    slow_writer.close()

    again, writer = await open_stream(port, last_event_id=seen[-1], limit=2**26)
    kind, history = await next_event(again)
    assert (kind, history["gap"]) == ("history", False)
    assert history["messages"][0]["id"] == seen[-1]  # the newest it holds, where the history takes up
    await adapter.send(Outbound(chat_id="c1", thread_id=None, text="live", idempotency_key="live"))
    assert (await next_event(again))[1]["id"] == "live"
    shown = seen + [m["id"] for m in history["messages"][1:]] + ["live"]
    assert shown == [f"m{n}" for n in range(REPLIES)] + ["live"]
    writer.close()
