"""The fake Discord itself, spoken to with a plain aiohttp client: the wire details discord.py relies on."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from platforms.fakes._discord_gateway import HEARTBEAT_ACK_DELAY
from platforms.fakes._discord_rest import NONCE_SECONDS
from platforms.fakes.discord import FakeDiscord

MESSAGE_CONTENT = 1 << 15


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(heartbeat_interval=0.05) as fake:
        yield fake
    assert fake.errors == []


@pytest.fixture
async def http(fake: FakeDiscord) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=fake.url, headers={"Authorization": f"Bot {fake.token}"}) as session:
        yield session


class Gateway:
    """A hand-driven gateway client."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws

    async def receive(self) -> dict[str, Any]:
        msg = await asyncio.wait_for(self.ws.receive(), 5)
        assert msg.type is aiohttp.WSMsgType.TEXT, msg
        return json.loads(msg.data)

    async def dispatch(self, event: str) -> dict[str, Any]:
        while True:
            frame = await self.receive()
            if frame["op"] == 0 and frame["t"] == event:
                return frame

    async def send(self, op: int, d: Any) -> None:
        await self.ws.send_str(json.dumps({"op": op, "d": d}))


async def _connect(http: aiohttp.ClientSession, fake: FakeDiscord, *, intents: int = MESSAGE_CONTENT,
                   token: str | None = None) -> Gateway:
    gateway = Gateway(await http.ws_connect(fake.gateway_url + "?v=10&encoding=json"))
    hello = await gateway.receive()
    assert hello["op"] == 10 and hello["d"]["heartbeat_interval"] == int(fake.heartbeat_interval * 1000)
    await gateway.send(2, {"token": token or fake.token, "intents": intents, "properties": {}})
    return gateway


async def test_rest_answers_exactly_application_json(fake: FakeDiscord, http: aiohttp.ClientSession) -> None:
    for path in ("/api/v10/users/@me", "/api/v10/oauth2/applications/@me", "/api/v10/gateway/bot"):
        async with http.get(path) as response:
            assert response.status == 200
            assert response.headers["Content-Type"] == "application/json"  # no charset: discord.py compares
    async with http.get("/api/v10/gateway/bot") as response:
        assert (await response.json())["url"] == fake.gateway_url
    async with aiohttp.ClientSession(base_url=fake.url) as anonymous:
        async with anonymous.get("/api/v10/users/@me") as response:
            assert response.status == 401
    assert [c.route for c in fake.calls][:2] == ["GET /users/@me", "GET /oauth2/applications/@me"]


async def test_messages_limits_nonces_and_edits(fake: FakeDiscord, http: aiohttp.ClientSession) -> None:
    channel = fake.dm_channel(7)
    url = f"/api/v10/channels/{channel}/messages"
    async with http.post(url, json={"content": "x" * 2001}) as response:
        body = await response.json()
        assert (response.status, body["code"]) == (400, 50035)
        assert body["errors"]["content"]["_errors"][0]["message"] == "Must be 2000 or fewer in length."
    sent = []
    for _ in range(2):
        async with http.post(url, json={"content": "hi", "nonce": "n1", "enforce_nonce": True, "flags": 4096}) as r:
            sent.append((await r.json())["id"])
    assert sent[0] == sent[1] and len(fake.bot_messages(channel)) == 1
    async with http.patch(f"{url}/{sent[0]}", json={"content": "edited"}) as response:
        assert response.status == 200
    [message] = fake.bot_messages(channel)
    assert (message.content, message.edits, message.flags, message.nonce) == ("edited", ["hi"], 4096, "n1")
    async with http.patch(f"{url}/1", json={"content": "?"}) as response:
        assert (response.status, (await response.json())["code"]) == (404, 10008)
    async with http.post("/api/v10/channels/1/messages", json={"content": "?"}) as response:
        assert (response.status, (await response.json())["code"]) == (404, 10003)
    async with http.delete(f"{url}/{sent[0]}") as response:
        assert response.status == 204 and fake.bot_messages(channel) == []


async def test_an_enforced_nonce_is_checked_for_five_minutes_and_the_history_serves_none() -> None:
    now = 1000.0
    async with FakeDiscord(clock=lambda: now) as fake, aiohttp.ClientSession(
            base_url=fake.url, headers={"Authorization": f"Bot {fake.token}"}) as http:
        first, other = fake.dm_channel(7), fake.dm_channel(8)

        async def post(channel: str) -> str:
            body = {"content": "hi", "nonce": "n1", "enforce_nonce": True}
            async with http.post(f"/api/v10/channels/{channel}/messages", json=body) as response:
                sent = await response.json()
                assert response.status == 200 and sent["nonce"] == "n1"  # the post's answer carries it
                return sent["id"]

        posted = await post(first)
        now += NONCE_SECONDS - 1
        assert await post(other) == posted  # the author's nonce, whatever the channel: the first message again
        now += 1
        again = await post(first)
        assert again != posted and [m.id for m in fake.bot_messages(first)] == [posted, again]
        async with http.get(f"/api/v10/channels/{first}/messages") as response:
            history = await response.json()
        assert [m["id"] for m in history] == [again, posted] and all("nonce" not in m for m in history)
    assert fake.errors == []


async def test_mentions_ping_as_allowed_mentions_say(fake: FakeDiscord, http: aiohttp.ClientSession) -> None:
    fake.push_guild_message(1, 2, 7, "hi", mention_bot=True)
    url = "/api/v10/channels/2/messages"
    content = "<@7> <@!8> <@&9> @here"
    for allowed, users, roles, everyone in [(None, ("7", "8"), ("9",), True),  # none given: everything pings
                                            ({"parse": []}, (), (), False),
                                            ({"parse": ["everyone"], "users": ["8"]}, ("8",), (), True)]:
        body = {"content": content} | ({} if allowed is None else {"allowed_mentions": allowed})
        async with http.post(url, json=body) as response:
            sent = await response.json()
        assert ([u["id"] for u in sent["mentions"]], sent["mention_roles"], sent["mention_everyone"]) == (
            list(users), list(roles), everyone)
        assert fake.bot_messages(2)[-1].pings.users == users
    async with http.post(url, json={"content": content, "allowed_mentions": {"parse": ["users"], "users": ["7"]}}) as r:
        assert (r.status, (await r.json())["code"]) == (400, 50035)
    # An edit's pings are worked out afresh: without allowed_mentions, from everything its content names.
    quiet = fake.bot_messages(2)[1]
    async with http.patch(f"{url}/{quiet.id}", json={"content": "now <@7>"}) as response:
        assert response.status == 200 and quiet.pings.users == ("7",)


async def test_scripted_failures(fake: FakeDiscord, http: aiohttp.ClientSession) -> None:
    channel = fake.dm_channel(7)
    fake.fail_next("POST /channels/{channel_id}/messages", 429, retry_after=0.25)
    fake.fail_next(f"POST /channels/{channel}/typing", 403, code=50013, message="Missing Permissions")
    async with http.post(f"/api/v10/channels/{channel}/messages", json={"content": "hi"}) as response:
        assert response.status == 429 and response.headers["Via"]  # without Via discord.py would not retry
        assert (await response.json()) == {"message": "You are being rate limited.", "retry_after": 0.25,
                                           "global": False, "code": 0}
    async with http.post(f"/api/v10/channels/{channel}/typing") as response:
        assert (response.status, (await response.json())["code"]) == (403, 50013)
    async with http.post(f"/api/v10/channels/{channel}/typing") as response:
        assert response.status == 204
    assert [c.status for c in fake.calls] == [429, 403, 204]


async def test_a_scripted_failure_may_close_the_connection_without_an_answer(
        fake: FakeDiscord, http: aiohttp.ClientSession) -> None:
    channel = fake.dm_channel(7)
    fake.fail_next("POST /channels/{channel_id}/typing", drop=True)  # a POST: aiohttp does not send it again
    with pytest.raises(aiohttp.ServerDisconnectedError):
        async with http.post(f"/api/v10/channels/{channel}/typing"):
            pass
    async with http.post(f"/api/v10/channels/{channel}/typing") as response:
        assert response.status == 204
    assert [c.status for c in fake.calls] == [0, 204]  # 0: not answered


async def test_gateway_identify_dispatch_resume(fake: FakeDiscord, http: aiohttp.ClientSession) -> None:
    fake.push_dm(7, "sent before anyone listened")  # no session hears it, as on Discord: it is in the history
    gateway = await _connect(http, fake)
    ready = await gateway.dispatch("READY")
    assert ready["d"]["resume_gateway_url"] == fake.gateway_url and ready["s"] == 1
    fake.push_dm(7, "sent once listened to")
    pending = await gateway.dispatch("MESSAGE_CREATE")
    assert (pending["d"]["content"], pending["s"]) == ("sent once listened to", 2)

    sent = time.monotonic()
    await gateway.send(1, pending["s"])
    assert (await gateway.receive()) == {"op": 11}
    # Not at once, as over a network: discord.py's heartbeat thread notes its send after the send
    # returns, and an ACK read before that made it warn of a whole interval's latency.
    assert time.monotonic() - sent >= HEARTBEAT_ACK_DELAY

    fake.request_reconnect()
    assert (await gateway.receive())["op"] == 7
    await gateway.ws.close()
    await fake.wait_for(lambda: fake.live_connections == 0)
    missed = fake.push_guild_message(1, 2, 7, "while away", mention_bot=True)
    fake.replay_on_resume([pending["d"]["id"]])

    gateway = Gateway(await http.ws_connect(ready["d"]["resume_gateway_url"]))
    assert (await gateway.receive())["op"] == 10
    await gateway.send(6, {"token": fake.token, "session_id": ready["d"]["session_id"], "seq": pending["s"]})
    events = []
    while not events or events[-1] != "RESUMED":
        frame = await gateway.receive()
        events.append(frame["t"] if frame["t"] != "MESSAGE_CREATE" else frame["d"]["id"])
    assert events == ["GUILD_CREATE", "CHANNEL_CREATE", missed, pending["d"]["id"], "RESUMED"]
    await gateway.ws.close()


async def test_a_heartbeat_acked_after_the_close_starts_no_send() -> None:
    """The ACK's delay was a timer: firing after `close`, it started a send nobody waited for, which
    asyncio destroyed pending when the loop closed, failing whichever test ran next."""
    fake = await FakeDiscord(heartbeat_interval=30).start()
    after_close: list[dict[str, Any]] = []
    closed = False
    send = fake._send

    def watched(conn: Any, frame: dict[str, Any], **options: Any) -> Any:
        if closed:
            after_close.append(frame)
        return send(conn, frame, **options)

    fake._send = watched  # type: ignore[method-assign]
    async with aiohttp.ClientSession(base_url=fake.url) as http:
        gateway = await _connect(http, fake)
        await gateway.dispatch("READY")
        await gateway.send(1, None)
        await fake.wait_for(lambda: any(op == 1 for op, _ in fake.gateway_ops))
        await fake.close()
        closed = True
        await asyncio.sleep(HEARTBEAT_ACK_DELAY + 0.02)  # past the ACK's delay: nothing may start now
    assert after_close == []


async def test_gateway_invalid_session_and_refusals(fake: FakeDiscord, http: aiohttp.ClientSession) -> None:
    gateway = await _connect(http, fake)
    session_id = (await gateway.dispatch("READY"))["d"]["session_id"]
    fake.invalidate_session()
    assert (await gateway.receive()) == {"op": 9, "d": False}
    await gateway.ws.close()

    gateway = Gateway(await http.ws_connect(fake.gateway_url))
    await gateway.receive()
    await gateway.send(6, {"token": fake.token, "session_id": session_id, "seq": 1})
    assert (await gateway.receive()) == {"op": 9, "d": False}  # not resumable any more
    await gateway.ws.close()

    refused = await _connect(http, fake, token="wrong")
    assert (await refused.ws.receive()).type is aiohttp.WSMsgType.CLOSE and refused.ws.close_code == 4004
    await refused.ws.close()


async def _dispatched_until(gateway: Gateway, message_id: str) -> list[str]:
    """The dispatches' names (a message's id for MESSAGE_CREATE) up to the message ``message_id``."""
    events: list[str] = []
    while not events or events[-1] != message_id:
        frame = await gateway.receive()
        if frame["op"] == 0:
            events.append(frame["d"]["id"] if frame["t"] == "MESSAGE_CREATE" else frame["t"])
    return events


async def test_a_new_session_gets_no_event_of_the_time_no_session_was_valid(
        fake: FakeDiscord, http: aiohttp.ClientSession) -> None:
    # Discord sends a new session only what happens from its READY on: what was said meanwhile is in
    # the channel's history, where a bot must look for it; a slash command meanwhile is lost.
    gateway = await _connect(http, fake)
    await gateway.dispatch("READY")
    fake.invalidate_session()
    assert (await gateway.receive()) == {"op": 9, "d": False}
    await gateway.ws.close()
    missed = fake.push_dm(7, "while no session was valid")
    fake.push_interaction("stop", 7)

    gateway = await _connect(http, fake)
    session_id = (await gateway.dispatch("READY"))["d"]["session_id"]
    live = fake.push_dm(7, "after the new READY")
    assert await _dispatched_until(gateway, live) == [live]
    async with http.get(f"/api/v10/channels/{fake.dm_channel(7)}/messages") as response:
        assert [m["id"] for m in await response.json()] == [live, missed]

    # A session still valid is another matter: its RESUME replays what it missed.
    await gateway.ws.close(code=4000)  # as discord.py closes to RESUME
    await fake.wait_for(lambda: fake.live_connections == 0)
    away = fake.push_dm(7, "while the valid session was away")
    gateway = Gateway(await http.ws_connect(fake.gateway_url))
    assert (await gateway.receive())["op"] == 10
    await gateway.send(6, {"token": fake.token, "session_id": session_id, "seq": 2})  # READY 1, live 2
    assert await _dispatched_until(gateway, away) == [away]
    await gateway.ws.close()


async def test_a_session_still_connected_hears_what_an_invalidated_newer_one_does_not(
        fake: FakeDiscord, http: aiohttp.ClientSession) -> None:
    first = await _connect(http, fake)  # two processes on one token, each with its own session
    await first.dispatch("READY")
    second = await _connect(http, fake)
    await second.dispatch("READY")
    fake.invalidate_session()  # the newest: the second's
    assert (await second.receive()) == {"op": 9, "d": False}
    await second.ws.close()
    heard = fake.push_dm(7, "the first session is still valid")
    assert await _dispatched_until(first, heard) == [heard]
    await first.ws.close()


async def test_gateway_refuses_the_content_intent_when_not_enabled() -> None:
    async with FakeDiscord(message_content_intent=False) as fake:
        async with aiohttp.ClientSession() as http:
            gateway = await _connect(http, fake)
            assert (await gateway.ws.receive()).type is aiohttp.WSMsgType.CLOSE
            assert gateway.ws.close_code == 4014
            await gateway.ws.close()
            gateway = await _connect(http, fake, intents=0)
            assert (await gateway.dispatch("READY"))["d"]["application"]["flags"] == 0
            await gateway.ws.close()


async def test_drop_socket_cuts_the_connection(fake: FakeDiscord, http: aiohttp.ClientSession) -> None:
    gateway = await _connect(http, fake)
    await gateway.dispatch("READY")
    assert fake.live_connections == 1
    fake.drop_socket()
    msg = await asyncio.wait_for(gateway.ws.receive(), 5)
    assert msg.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR)
    await fake.wait_for(lambda: fake.live_connections == 0)


async def test_interactions_acknowledge_once_then_follow_up(fake: FakeDiscord, http: aiohttp.ClientSession) -> None:
    gateway = await _connect(http, fake)
    await gateway.dispatch("READY")
    interaction_id = fake.push_interaction("stop", 7)
    token = (await gateway.dispatch("INTERACTION_CREATE"))["d"]["token"]
    callback = f"/api/v10/interactions/{interaction_id}/{token}/callback?with_response=1"
    async with aiohttp.ClientSession(base_url=fake.url) as anonymous:  # interaction calls carry no bot token
        async with anonymous.post(callback, json={"type": 5}) as response:
            body = await response.json()
            assert response.status == 200 and body["interaction"]["response_message_loading"] is True
        async with anonymous.post(callback, json={"type": 5}) as response:
            assert (response.status, (await response.json())["code"]) == (400, 40060)
        hook = f"/api/v10/webhooks/{fake.application_id}/{token}"
        async with anonymous.patch(f"{hook}/messages/%40original", json={"content": "Stopped."}) as response:
            assert response.status == 200
        async with anonymous.post(f"{hook}?wait=true", json={"content": "More."}) as response:
            assert response.status == 200
        async with anonymous.post(f"/api/v10/webhooks/{fake.application_id}/bogus", json={"content": "?"}) as r:
            assert (r.status, (await r.json())["code"]) == (404, 10015)
    assert [m.content for m in fake.bot_messages(fake.dm_channel(7))] == ["Stopped.", "More."]
    await gateway.ws.close()


async def test_wait_for_times_out_with_a_clear_error(fake: FakeDiscord) -> None:
    with pytest.raises(TimeoutError, match="condition not met"):
        await fake.wait_for(lambda: False, timeout=0.1)


async def test_runs_standalone_until_ctrl_c() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "platforms.fakes.discord", "--port", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        lines = []
        while not lines or "Ctrl-C" not in lines[-1]:
            lines.append((await asyncio.wait_for(process.stdout.readline(), 10)).decode())  # type: ignore[union-attr]
        urls = {k.strip(): v.strip() for k, v in (line.split(": ", 1) for line in lines if ": " in line)}
        assert urls["api_base"].startswith("http://127.0.0.1:") and urls["api_base"].endswith("/api/v10")
        async with aiohttp.ClientSession() as http:
            async with http.get(urls["api_base"] + "/gateway/bot",
                                headers={"Authorization": f"Bot {urls['token']}"}) as response:
                assert (await response.json())["url"] == urls["gateway_url"]
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 10) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_replies_need_the_message_unless_told_not_to(fake: FakeDiscord, http: aiohttp.ClientSession) -> None:
    asked = fake.push_guild_message(5, 6, 7, "how big?", mention_bot=True)
    url = "/api/v10/channels/6/messages"
    async with http.post(url, json={"content": "big", "message_reference": {"message_id": int(asked)}}) as response:
        reply = await response.json()
    assert (reply["type"], reply["message_reference"]["message_id"]) == (19, asked)
    assert reply["referenced_message"]["content"].endswith("how big?")
    fake.delete_message(6, asked)
    async with http.post(url, json={"content": "lost", "message_reference": {"message_id": asked}}) as response:
        body = await response.json()
        assert (response.status, body["code"]) == (400, 50035)
        assert body["errors"]["message_reference"]["_errors"][0]["code"] == "MESSAGE_REFERENCE_UNKNOWN_MESSAGE"
    async with http.post(url, json={"content": "anyway", "message_reference": {
            "message_id": asked, "fail_if_not_exists": False}}) as response:
        plain = await response.json()
    assert plain["type"] == 0 and "message_reference" not in plain
    assert [(m.content, m.reply_to) for m in fake.bot_messages(6)] == [("big", asked), ("anyway", None)]
    async with http.get(url) as response:  # the history serves the reply with the message gone
        [anyway, big] = await response.json()
    assert big["referenced_message"] is None and big["message_reference"]["message_id"] == asked


async def test_a_reply_without_read_message_history_is_refused_with_discords_own_code(
        fake: FakeDiscord, http: aiohttp.ClientSession) -> None:
    """Discord refuses such a reply with 403 160002 ("Cannot reply without permission to read message history"),
    not 50013 Missing Permissions, which it keeps for a post the bot may not make at all: the fake said 50013."""
    asked = fake.push_guild_message(5, 6, 7, "how big?", mention_bot=True)
    url, reply = "/api/v10/channels/6/messages", {"content": "big", "message_reference": {"message_id": asked}}
    fake.deny(6, "read_message_history")
    async with http.post(url, json=reply) as response:
        assert (response.status, await response.json()) == (403, {
            "code": 160002, "message": "Cannot reply without permission to read message history"})
    async with http.post(url, json={"content": "big"}) as response:
        assert response.status == 200
    fake.deny(6, "send_messages")
    async with http.post(url, json=reply) as response:
        assert (response.status, (await response.json())["code"]) == (403, 50013)
    assert [m.content for m in fake.bot_messages(6)] == ["big"]


async def test_a_users_edit_is_sent_whole_its_mentions_worked_out_afresh(
        fake: FakeDiscord, http: aiohttp.ClientSession) -> None:
    gateway = await _connect(http, fake)
    await gateway.dispatch("READY")
    sent = fake.push_guild_message(1, 2, 7, "deploy to prod", mention_bot=True, reply_to_bot=True, nick="Bo")
    created = (await gateway.dispatch("MESSAGE_CREATE"))["d"]
    fake.edit_message(2, sent, "deploy to staging, <@43>")
    update = (await gateway.dispatch("MESSAGE_UPDATE"))["d"]
    assert (update["content"], [u["id"] for u in update["mentions"]]) == ("deploy to staging, <@43>", ["43"])
    assert update["edited_timestamp"] is not None
    assert {k: update[k] for k in ("member", "message_reference", "guild_id", "author")} == {
        k: created[k] for k in ("member", "message_reference", "guild_id", "author")}
    async with http.get("/api/v10/channels/2/messages") as response:
        [served] = [m for m in await response.json() if m["id"] == sent]
    assert (served["content"], served["mentions"]) == ("deploy to staging, <@43>", update["mentions"])
    await gateway.ws.close()
