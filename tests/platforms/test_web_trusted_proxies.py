"""``trusted_proxies``: the signing-in proxy's user header is read only on a connection from the proxy. A client
that reaches the port around it, naming an allowed user in the header, is refused on every route that reads it,
whatever forwarding headers it adds; unset, the header is taken from anyone, as before."""

from __future__ import annotations

import aiohttp

from platforms.web import WebChatAdapter
from tests.web_client import EventStream, Intake, WebChat, post_message, serve_from

PROXY = "10.0.0.5"
AROUND = "203.0.113.7"
REFUSED = ("no user: the X-Forwarded-User header is read only from the signing-in proxy"
           " (platforms.web.trusted_proxies)")


async def _answers(http: aiohttp.ClientSession, base: str, headers: dict[str, str], key: str) -> list[int]:
    """The statuses of a post, a history, an event stream and a file download, each naming alice."""
    statuses = [(await post_message(http, base, "c1", "hi", key=key, headers=headers))[0]]
    for path in ("history?chat=c1", "events?chat=c1", "files/f0123456789?chat=c1"):
        async with http.get(f"{base}/chat/api/{path}", headers=headers) as response:
            statuses.append(response.status)
            if response.status == 401:
                assert (await response.json())["error"] == REFUSED
    return statuses


async def test_the_user_header_is_read_only_from_a_trusted_proxy(tmp_path) -> None:
    intake, peer = Intake(), [PROXY]
    adapter = WebChatAdapter(user_header="X-Forwarded-User", allowed_users=["alice"], history_reader=intake.history,
                             trusted_proxies=[PROXY, "fd00::/8"], files_dir=tmp_path, keep_alive=60)
    await adapter.start(intake.take)
    runner, base = await serve_from(adapter, peer)
    alice = {"X-Forwarded-User": "alice"}
    try:
        async with aiohttp.ClientSession() as http:
            assert await _answers(http, base, alice, "key-proxied-1") == [202, 200, 200, 404]  # 404: no such file
            for around in (alice, {**alice, "X-Forwarded-For": PROXY, "Forwarded": f"for={PROXY}",
                                   "X-Real-IP": PROXY}):
                peer[0] = AROUND
                assert await _answers(http, base, around, "key-around-01") == [401, 401, 401, 401]
            assert intake.texts == ["hi"]  # alice's, through the proxy, only
            # A socket listening on "::" names an IPv4 proxy ::ffff:10.0.0.5.
            for peer[0] in (f"::ffff:{PROXY}", "fd00::7"):
                async with EventStream(http, base, "c1", headers=alice) as stream:
                    assert (await stream.next())[0] == "history"
    finally:
        await adapter.stop()
        await runner.cleanup()


async def test_without_trusted_proxies_the_header_is_taken_from_anyone_as_before(tmp_path) -> None:
    intake = Intake()
    adapter = WebChatAdapter(user_header="X-Forwarded-User", allowed_users=["alice"], history_reader=intake.history,
                             files_dir=tmp_path)
    await adapter.start(intake.take)
    runner, base = await serve_from(adapter, [AROUND])
    try:
        async with aiohttp.ClientSession() as http:
            status, _ = await post_message(http, base, "c1", "hi", key="key-anyone-01",
                                           headers={"X-Forwarded-User": "alice"})
            assert status == 202
    finally:
        await adapter.stop()
        await runner.cleanup()


async def test_the_configured_trusted_proxies_guard_the_gateways_web_chat(tmp_path) -> None:
    chat = await WebChat(tmp_path, platforms={"web": {
        "enabled": True, "user_header": "X-Forwarded-User", "allowed_users": ["alice"],
        "trusted_proxies": [PROXY]}}).start()
    try:
        async with aiohttp.ClientSession() as http:  # from 127.0.0.1, which is not the proxy
            status, body = await post_message(http, chat.base, "c1", "hi", key="key-config-01",
                                              headers={"X-Forwarded-User": "alice"})
            assert (status, body) == (401, {"error": REFUSED})
    finally:
        await chat.stop()
