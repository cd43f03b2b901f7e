"""WebChatAdapter over loopback HTTP, without a gateway: the page, the API's checks, live events.

The gateway's side (durable history, one turn per key, restarts) is in
tests/scenarios/test_web_chat.py; the page itself in a browser in
tests/scenarios/test_web_chat_browser.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from platforms.base import Accepted, Adapter, Deleting, HistoryReading, Inbound, Outbound, Streaming
from platforms.web import MAX_BODY, MAX_TEXT, WebChatAdapter
from platforms.web_access import is_loopback
from platforms.web_events import IDLE, ChatStreams, serve_events
from tests.sqlite_errors import full_disk
from tests.web_client import EventStream, post_message, serve, serve_routes

TOKEN = "tok-0123456789-abcdefghij"
JSON = {"Content-Type": "application/json"}


class Sink:
    """Stands in for the gateway: records inbounds, answers a repeated event id as a duplicate."""

    def __init__(self) -> None:
        self.inbound: list[Inbound] = []
        self.fail = False
        self.meanwhile: Callable[[], Awaitable[object]] | None = None
        """Awaited while taking an event, as the gateway answers a command before its POST is answered."""

    async def __call__(self, inbound: Inbound) -> Accepted:
        if self.meanwhile is not None:
            await self.meanwhile()
        if self.fail:  # the store's refusal, tried again (a fault of the message is final)
            raise full_disk()
        duplicate = any(i.event_id == inbound.event_id for i in self.inbound)
        self.inbound.append(inbound)
        return Accepted(None if duplicate else f"turn-{len(self.inbound)}", f"web|{inbound.chat_id}|", duplicate)


@pytest.fixture
async def started() -> AsyncIterator[Any]:
    """``started(**adapter_kwargs)`` -> (adapter, sink, base url); all stopped after the test."""
    running: list[tuple[WebChatAdapter, web.AppRunner]] = []

    async def start(**kw: Any) -> tuple[WebChatAdapter, Sink, str]:
        adapter = WebChatAdapter(**kw)
        sink = Sink()
        await adapter.start(sink)
        runner, url = await serve(adapter)
        running.append((adapter, runner))
        return adapter, sink, url

    yield start
    for adapter, runner in running:
        await adapter.stop()
        await runner.cleanup()


def test_is_an_adapter_with_the_background_web_tier() -> None:
    adapter = WebChatAdapter()
    assert isinstance(adapter, Adapter)
    assert isinstance(adapter, HistoryReading) and isinstance(adapter, Streaming) and isinstance(adapter, Deleting)
    assert adapter.name == "web"
    assert (adapter.tier.interim_assistant_messages, adapter.tier.long_running_notifications) == (True, True)
    assert adapter.tier.messaging is False  # gateway_mode auto delegates in the background here
    assert adapter.typing_interval > 0


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2:8080", True), ("localhost", True), ("localhost:80", True),
    ("app.localhost", True), ("::1", True), ("[::1]:8080", True), ("0.0.0.0", False), ("", False), (None, False),
    ("::", False), ("192.168.1.4", False), ("example.com:8080", False), ("localhost.example.com", False),
])  # fmt: skip
def test_is_loopback(host: str | None, loopback: bool) -> None:
    assert is_loopback(host) is loopback


async def test_the_page_and_its_files_are_served_with_a_strict_policy(started, http) -> None:
    _, _, base = await started()
    async with http.get(f"{base}/chat") as page:
        assert page.status == 200 and "text/html" in page.headers["Content-Type"]
        assert "default-src 'self'" in page.headers["Content-Security-Policy"]
        html = await page.text()
    assert '<script src="chat/static/chat.js"' in html and "https://" not in html  # nothing from a CDN
    for name, kind in (("live.js", "javascript"), ("markdown.js", "javascript"), ("chat.js", "javascript"),
                       ("chat.css", "text/css")):
        async with http.get(f"{base}/chat/static/{name}") as file:
            assert file.status == 200 and kind in file.headers["Content-Type"]
    async with http.get(f"{base}/chat/static/../web.py") as escape:
        assert escape.status in (403, 404)


async def test_the_page_under_its_static_path_may_not_be_framed_either(started, http) -> None:
    # /chat/static/index.html is the whole working page (it links its files by bare name):
    # without the page's headers there, another site could frame it and steer a visitor's clicks.
    _, _, base = await started()
    for name in ("index.html", "chat.js", "markdown.js", "live.js", "chat.css"):
        async with http.get(f"{base}/chat/static/{name}") as file:
            assert file.status == 200, name
            assert "frame-ancestors 'none'" in file.headers.get("Content-Security-Policy", ""), name
            assert file.headers.get("X-Content-Type-Options") == "nosniff", name
    for name in ("missing.js", "..%2Fweb.py", "%2E%2E/web.py"):
        async with http.get(f"{base}/chat/static/{name}") as other:
            assert other.status == 404, name


async def test_a_message_reaches_the_sink_with_its_key_as_the_event_id(started, http) -> None:
    _, sink, base = await started()
    status, body = await post_message(http, base, "c1", "hello", key="key-00000001")
    assert status == 202 and body == {"id": "user:key-00000001", "turn_id": "turn-1", "duplicate": False}
    (inbound,) = sink.inbound
    assert (inbound.platform, inbound.chat_id, inbound.user_id, inbound.text) == ("web", "c1", "web", "hello")
    assert inbound.event_id == "key-00000001@c1" and not inbound.is_command
    status, body = await post_message(http, base, "c1", "/stop", key="key-00000002")
    assert status == 202 and sink.inbound[-1].is_command


@pytest.mark.parametrize(("payload", "error"), [
    (b"not json", "valid UTF-8 JSON"),
    (b'{"chat": "c1", "text": "hi", "key": "key-00000001", "n": NaN}', "valid UTF-8 JSON"),
    (b"[1]", "JSON object"),
    (b'{"chat": "c1", "text": "hi"}', '"key"'),
    (b'{"chat": "c1", "text": "hi", "key": "short"}', '"key"'),
    (b'{"chat": "c 1", "text": "hi", "key": "key-00000001"}', '"chat"'),
    (b'{"chat": "c1", "text": "  ", "key": "key-00000001"}', '"text"'),
    (b'{"chat": "c1", "text": "' + b"x" * (MAX_TEXT + 1) + b'", "key": "key-00000001"}', "at most"),
    # Valid JSON that Python's int-string conversion limit will not read: said so, not "not JSON".
    (b'{"chat": "c1", "text": "hi", "key": "key-00000001", "n": ' + b"9" * 4301 + b"}",
     "body has a number too long to read (over 4300 digits)"),
])  # fmt: skip
async def test_a_bad_message_is_400_naming_the_problem(started, http, payload: bytes, error: str) -> None:
    _, sink, base = await started()
    async with http.post(f"{base}/chat/api/messages", data=payload, headers=JSON) as response:
        assert response.status == 400
        assert error in (await response.json())["error"]
    assert sink.inbound == []


async def test_a_body_starting_with_a_byte_order_mark_is_the_json_after_it(started, http) -> None:
    _, sink, base = await started()
    body = b'\xef\xbb\xbf{"chat": "c1", "text": "hi", "key": "key-00000001"}'
    async with http.post(f"{base}/chat/api/messages", data=body, headers=JSON) as response:
        assert response.status == 202, await response.text()
    assert [i.text for i in sink.inbound] == ["hi"]


async def test_a_body_over_the_limit_is_413_whether_its_length_is_declared_or_not(started, http) -> None:
    _, sink, base = await started()
    big = b'{"chat": "c1", "key": "key-00000001", "text": "' + b"x" * MAX_BODY + b'"}'

    async def chunked(padding: int = 0):
        yield big + b" " * padding

    # Past the server's own cap on bodies (aiohttp's default here, 1 MiB), too: still this API's JSON error.
    for data in (big, chunked(), chunked(4 * 1024 * 1024)):
        async with http.post(f"{base}/chat/api/messages", data=data, headers=JSON) as response:
            assert response.status == 413
            assert (await response.json())["error"] == f"body over {MAX_BODY} bytes"
    assert sink.inbound == []


async def test_before_start_and_on_a_gateway_failure_the_page_is_told_to_retry(started, http) -> None:
    adapter, sink, base = await started()
    sink.fail = True
    status, body = await post_message(http, base, "c1", "hi", key="key-00000001")
    assert status == 500 and "retry" in body["error"]
    await adapter.stop()
    status, body = await post_message(http, base, "c1", "hi", key="key-00000001")
    assert status == 503 and "same key" in body["error"]


async def test_with_a_token_every_api_call_needs_it_and_it_is_never_logged(started, http, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    _, sink, base = await started(token=TOKEN)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
        status, body = await post_message(http, base, "c1", "hi", key="key-00000001", headers=headers)
        assert status == 401 and TOKEN not in str(body)
        async with http.get(f"{base}/chat/api/history?chat=c1", headers=headers) as response:
            assert response.status == 401 and response.headers["WWW-Authenticate"].startswith("Bearer")
        async with http.get(f"{base}/chat/api/events?chat=c1", headers=headers) as response:
            assert response.status == 401
    assert sink.inbound == []
    async with http.get(f"{base}/chat") as page:  # the page itself asks for the token
        assert page.status == 200
    status, _ = await post_message(http, base, "c1", "hi", key="key-00000001",
                                   headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 202 and len(sink.inbound) == 1
    assert TOKEN not in caplog.text


async def test_a_token_that_is_not_utf8_is_a_wrong_token_not_a_crash(started) -> None:
    # A browser sends a Latin-1 character typed into the sign-in form as one raw byte.
    _, _, base = await started(token=TOKEN)
    host, _, port = base.removeprefix("http://").partition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(b"GET /chat/api/history?chat=c1 HTTP/1.1\r\nHost: " + host.encode() +
                 b"\r\nAuthorization: Bearer caf\xe9\r\nConnection: close\r\n\r\n")
    answer = await reader.read()
    writer.close()
    await writer.wait_closed()
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:200]
    assert b"WWW-Authenticate: Bearer" in answer  # so the page asks for the token again


async def test_without_a_token_only_a_loopback_host_is_served(started, http) -> None:
    _, sink, base = await started()
    status, body = await post_message(http, base, "c1", "hi", key="key-00000001", headers={"Host": "evil.example"})
    assert status == 403 and "platforms.web.token" in body["error"]
    status, _ = await post_message(http, base, "c1", "hi", key="key-00000001", headers={"Host": "localhost:8080"})
    assert status == 202 and len(sink.inbound) == 1


async def test_a_foreign_origin_refused_is_logged_with_the_hosts_it_was_compared_with(started, http, caplog) -> None:
    # A reverse proxy that rewrites Host refuses every page it serves this way: the log must show it.
    caplog.set_level(logging.INFO, logger="platforms.web_access")
    _, sink, base = await started()
    headers = {"Origin": "https://chat.example.com", "Host": "localhost:8080"}
    status, body = await post_message(http, base, "c1", "hi", key="key-00000001", headers=headers)
    assert status == 403 and body == {"error": "requests from other sites' pages are not served"}
    assert "Origin 'https://chat.example.com', Host 'localhost:8080', X-Forwarded-Host None" in caplog.text
    assert sink.inbound == []


async def test_other_sites_pages_cannot_post_through_a_persons_browser(started, http) -> None:
    _, sink, base = await started()
    host = base.removeprefix("http://")
    body = b'{"chat": "c1", "text": "rm -rf", "key": "key-00000001"}'
    # A form or a "simple" fetch from another site: text/plain, with that site's Origin.
    async with http.post(f"{base}/chat/api/messages", data=body, headers={"Content-Type": "text/plain"}) as response:
        assert response.status == 415
        assert (await response.json())["error"] == "send the message with the header Content-Type: application/json"
    for origin in ("https://evil.example", "null", f"http://{host}.evil.example"):
        status, body_ = await post_message(http, base, "c1", "hi", key="key-00000002", headers={"Origin": origin})
        assert status == 403 and "other sites" in body_["error"]
        async with http.get(f"{base}/chat/api/events?chat=c1", headers={"Origin": origin}) as response:
            assert response.status == 403
    assert sink.inbound == []
    status, _ = await post_message(http, base, "c1", "hi", key="key-00000003", headers={"Origin": f"http://{host}"})
    assert status == 202
    proxied = {"Origin": "https://chat.example.com", "X-Forwarded-Host": "chat.example.com", "Host": "localhost"}
    status, body_ = await post_message(http, base, "c1", "hi", key="key-00000004", headers=proxied)
    assert status == 403 and "localhost only" in body_["error"]  # served elsewhere through a proxy: a token is due
    _, sink, base = await started(token=TOKEN)
    status, _ = await post_message(http, base, "c1", "hi", key="key-00000004", headers={  # behind a proxy
        **proxied, "Authorization": f"Bearer {TOKEN}"})
    assert status == 202 and len(sink.inbound) == 1


async def test_a_proxy_user_header_names_the_user_and_the_allowlist_applies(started, http) -> None:
    _, sink, base = await started(user_header="X-Forwarded-User", allowed_users=["@Alice", 42])
    async with http.get(f"{base}/chat/api/events?chat=c1") as response:
        assert response.status == 401 and "X-Forwarded-User" in (await response.json())["error"]
        assert "WWW-Authenticate" not in response.headers  # no token to ask the person for
    status, body = await post_message(http, base, "c1", "hi", key="key-00000002",
                                      headers={"X-Forwarded-User": "mallory"})
    assert status == 403 and "mallory" in body["error"]
    for user in ("alice", "42"):
        status, _ = await post_message(http, base, "c1", "hi", key=f"key-{user}-0001", headers={"X-Forwarded-User": user})
        assert status == 202
    assert [(i.user_id, i.user_name, i.chat_id) for i in sink.inbound] == [
        ("alice", "alice", "alice:c1"), ("42", "42", "42:c1")]  # each user's chats are their own
    _, sink, base = await started(user_header="X-Forwarded-User", allow_all=True)
    status, _ = await post_message(http, base, "c1", "hi", key="key-00000003", headers={"X-Forwarded-User": "bob"})
    assert status == 202


async def test_spaces_around_an_allowed_user_do_not_lock_them_out(started, http) -> None:
    # ALLOWED=" alice" from an env file: the header's name is stripped, and the entry was not.
    _, _, base = await started(user_header="X-Forwarded-User", allowed_users=[" alice\r"])
    status, _ = await post_message(http, base, "c1", "hi", key="key-00000004", headers={"X-Forwarded-User": "alice"})
    assert status == 202


async def test_a_user_header_that_is_not_utf8_names_no_user(started) -> None:
    # Its bytes would arrive as lone surrogates, which no chat id in the store can hold (a 500 there).
    _, _, base = await started(user_header="X-Forwarded-User", allow_all=True)
    host, port = base.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(b"GET /chat/api/history?chat=c1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                 b"X-Forwarded-User: al\xffce\r\n\r\n")
    async with asyncio.timeout(5):
        reply = await reader.read()
    writer.close()
    assert reply.startswith(b"HTTP/1.1 401 ") and b"no user in the X-Forwarded-User header" in reply


async def test_a_stream_starts_with_the_history_then_carries_this_chats_events(started, http) -> None:
    history = [{"id": "user:key-00000001@c1", "role": "user", "kind": "user", "text": "earlier", "time": 1.0,
                "edited": False}]
    reads: list[tuple[str, int]] = []

    def reader(chat_id: str, limit: int) -> list[dict[str, Any]]:
        reads.append((chat_id, limit))
        return [dict(m) for m in history] if chat_id == "c1" else []

    adapter, _, base = await started(history_reader=reader, history_limit=50)
    async with EventStream(http, base, "c1") as stream, EventStream(http, base, "c2") as other:
        kind, data = await stream.next()
        assert kind == "history" and data["messages"][0]["id"] == "user:key-00000001"  # the page's own key
        assert reads[0] == ("c1", 50)
        assert (await other.next())[0] == "history"
        await post_message(http, base, "c1", "hi", key="key-00000002")
        kind, data = await stream.next()
        assert (kind, data["id"], data["role"], data["text"]) == ("user", "user:key-00000002", "user", "hi")
        sent = await adapter.send(Outbound("c1", None, "hello", kind="reply", idempotency_key="t1:reply:0"))
        assert sent.message_id == "t1:reply:0"
        await adapter.edit("c1", None, sent.message_id, "hello again")
        await adapter.typing("c1", None)
        await adapter.delete("c1", None, sent.message_id)
        await adapter.idle("c1", None)
        kinds = [await stream.next() for _ in range(5)]
        assert [k for k, _ in kinds] == ["message", "edit", "typing", "delete", "idle"]
        assert kinds[0][1]["kind"] == "reply" and kinds[1][1] == {"id": "t1:reply:0", "text": "hello again"}
        async with http.get(f"{base}/chat/api/history?chat=c1") as response:
            assert (await response.json())["messages"][0]["text"] == "earlier"
        await adapter.close_streams()
        with pytest.raises(EOFError):  # c2 saw none of c1's events: the next thing it sees is the end
            await other.next()


async def test_a_quiet_stream_gets_keep_alives_and_stop_ends_every_stream(started, http) -> None:
    adapter, _, base = await started(keep_alive=0.01)
    async with EventStream(http, base, "c1") as stream:
        assert (await stream.next())[0] == "history"
        assert await stream.comment() == "keep-alive"
        await adapter.close_streams()
        with pytest.raises(EOFError):
            await stream.next()


async def test_the_stream_tells_the_page_its_keep_alive_interval(started, http) -> None:
    # The page counts a stream quiet for longer as dead (live.js): one number, the server's.
    _, _, base = await started(keep_alive=0.25)
    async with http.get(f"{base}/chat/api/events?chat=c1") as response:
        assert response.headers["Switchboard-Keep-Alive"] == "0.25"


async def test_by_default_a_stream_that_died_without_a_close_is_noticed_within_fifteen_seconds(started, http) -> None:
    # A laptop's Wi-Fi gone: nothing more comes, not even a close. At 15 s the page read connected for 37 s.
    _, _, base = await started()
    async with http.get(f"{base}/chat/api/events?chat=c1") as response:
        assert 2.5 * float(response.headers["Switchboard-Keep-Alive"]) <= 15


async def test_a_message_the_gateway_fails_to_record_is_shown_to_no_page(started, http) -> None:
    adapter, sink, base = await started()
    async with EventStream(http, base, "c1") as other_tab:
        assert (await other_tab.next())[0] == "history"
        sink.fail = True
        status, _ = await post_message(http, base, "c1", "not recorded", key="key-00000001")
        assert status == 500
        await adapter.send(Outbound("c1", None, "later", kind="reply", idempotency_key="t1:reply:0"))
        assert (await other_tab.next())[0] == "message"  # nothing came before it: no such message
        sink.fail = False
        status, _ = await post_message(http, base, "c1", "not recorded", key="key-00000001")  # the page's retry
        assert status == 202
        shown = await other_tab.until("user")
        assert (shown["id"], shown["text"]) == ("user:key-00000001", "not recorded")


async def test_what_the_gateway_publishes_while_taking_a_message_shows_after_it(started, http) -> None:
    adapter, sink, base = await started()
    sink.meanwhile = lambda: adapter.send(Outbound("c1", None, "Stopped.", kind="command", idempotency_key="a:0"))
    async with EventStream(http, base, "c1") as other_tab:
        assert (await other_tab.next())[0] == "history"
        status, _ = await post_message(http, base, "c1", "/stop", key="key-00000001")
        assert status == 202
        assert [(await other_tab.next())[1]["text"] for _ in range(2)] == ["/stop", "Stopped."]


async def test_what_a_chat_publishes_while_a_place_is_held_waits_behind_it_in_order() -> None:
    streams = ChatStreams()
    page = streams.subscribe("c1")
    with streams.in_order("c1") as first:
        streams.publish("c1", "message", {"id": "a"})
        with pytest.raises(RuntimeError), streams.in_order("c1") as failed:
            failed.event = ("user", {"id": "not recorded"})
            raise RuntimeError("database is locked")
        with streams.in_order("c1") as second:
            streams.publish("c1", "message", {"id": "b"})
            second.event = ("user", {"id": "2"})
        streams.publish("c2", "message", {"id": "other chat"})  # held for c1 only
        assert await page.next(0.01) is IDLE
        first.event = ("user", {"id": "1"})
    streams.publish("c1", "message", {"id": "c"})
    assert [(await page.next(0.01))[1]["id"] for _ in range(5)] == ["1", "a", "2", "b", "c"]
    assert await page.next(0.01) is IDLE


async def test_a_page_that_falls_behind_is_cut_off_and_starts_again_from_the_history() -> None:
    streams = ChatStreams(max_queued=3)
    slow, other = streams.subscribe("c1"), streams.subscribe("c2")
    for i in range(4):
        streams.publish("c1", "message", {"id": str(i)})
    assert slow.ended and not other.ended
    assert await slow.next(0.01) is None  # what it had queued is let go at once, never sent


async def test_a_page_that_takes_nothing_is_closed_and_unsubscribed() -> None:
    """A hung tab keeps its connection open, its kernel acknowledging what it never reads: the
    stream is closed once a write has waited ``write_timeout``, and holds nothing more."""
    streams = ChatStreams()

    async def events(request: web.Request) -> web.StreamResponse:
        return await serve_events(request, streams, streams.subscribe("c1"), ("history", {}), 60.0,
                                  write_timeout=0.3)

    runner, _ = await serve_routes([web.get("/events", events)])
    port = runner.addresses[0][1]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        await writer.drain()
        async with asyncio.timeout(10):
            while not streams.watching("c1"):
                await asyncio.sleep(0.01)
            while streams.watching("c1"):  # about a megabyte each, until the socket's buffers are full
                streams.publish("c1", "state", {"blob": "x" * 1_000_000})
                await asyncio.sleep(0.05)
        writer.close()
    finally:
        await runner.cleanup()


async def test_an_ended_subscription_says_so() -> None:
    streams = ChatStreams()
    sub = streams.subscribe("c1")
    streams.publish("c1", "message", {"id": "1"})
    streams.end_all()
    assert await sub.next(1.0) == ("message", {"id": "1"})
    assert await sub.next(1.0) is None
    streams.unsubscribe(sub)
    assert streams.watching("c1") == 0


async def test_a_lone_surrogate_in_a_message_reaches_the_gateway_as_u_fffd(started, http) -> None:
    # JSON may spell one ("\ud800"), and no UTF-8 store or platform can hold it (docs/gateway.md).
    _, sink, base = await started(token=TOKEN)
    async with http.post(f"{base}/chat/api/messages", headers={**JSON, "Authorization": f"Bearer {TOKEN}"},
                         data=b'{"chat": "c1", "text": "caf\\ud800 ok", "key": "key-00000001"}') as response:
        assert response.status == 202, await response.text()
    assert [i.text for i in sink.inbound] == ["caf\ufffd ok"]
