"""A request naming its user twice in the proxy's user header: a proxy that appends its header after the one
the client sent (rather than replacing it) must not let the client's claim stand."""

from __future__ import annotations

import asyncio

from platforms.web import WebChatAdapter
from tests.web_client import Intake, serve


async def _get(base: str, *users: bytes) -> bytes:
    host, port = base.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    named = b"".join(b"X-Forwarded-User: " + user + b"\r\n" for user in users)
    writer.write(b"GET /chat/api/history?chat=c1 HTTP/1.1\r\nHost: chat.example.com\r\nConnection: close\r\n"
                 + named + b"\r\n")
    async with asyncio.timeout(5):
        reply = await reader.read()
    writer.close()
    return reply


async def test_a_user_header_given_twice_is_refused_not_read_as_its_first(tmp_path) -> None:
    intake = Intake()
    adapter = WebChatAdapter(user_header="X-Forwarded-User", allowed_users=["alice", "bob"],
                             history_reader=intake.history, files_dir=tmp_path)
    await adapter.start(intake.take)
    runner, base = await serve(adapter)
    try:
        assert (await _get(base, b"bob")).startswith(b"HTTP/1.1 200 ")
        # bob, signed in, claims alice's name; the proxy adds its own header after his.
        reply = await _get(base, b"alice", b"bob")
        assert reply.startswith(b"HTTP/1.1 401 ")
        assert b"the X-Forwarded-User header is given more than once" in reply
    finally:
        await adapter.stop()
        await runner.cleanup()
