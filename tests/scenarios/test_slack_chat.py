"""End to end on Slack: the real SlackAdapter (slack-bolt / slack-sdk) talking to the loopback
FakeSlack over Socket Mode or HTTP, with the real Gateway in the middle.

Everything stays on 127.0.0.1 with port 0. Each test waits for what it expects with
`FakeSlack.wait_for`, then settles briefly (≤ 0.3 s) to prove that nothing more arrives.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.server import Server
from gateway.store import session_key
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import Call, FakeSlack
from platforms.slack import SlackAdapter
from tests.hanging_children import HANGING_CHILDREN, children_hanging, delegating_parent, hanging_child
from tests.plugin_modules import plugin_module

SECRET = "scenario-signing-secret"
PLACEHOLDER = "_working…_"
LIST = "Compare these:\n- apples\n- pears"
DM = "DU1"  # the fake's DM channel with user U1


# -- models ----------------------------------------------------------------------------------


def echo(request: ModelRequest) -> dict:
    """A parent that answers every user message with ``re: <message>``, without the sender a
    channel's message comes with (`gateway.senders`)."""
    last = request.messages[-1]
    return {"text": "re: " + re.sub(r"^\[user U\w+\] ", "", str(last.get("content")))}


REAL_TURN_WAIT = 20.0
"""Seconds to wait for the reply of a `slow` turn, which sleeps seconds of real time (its notices are
paced by the wall clock): the wait ends as soon as the reply shows, so a loaded machine only needs room."""


def slow(seconds: float, text: str = "finished") -> dict:
    return {"parent": [[{"sleep": seconds, "text": text}]]}


# -- the chat under test ---------------------------------------------------------------------


@dataclass
class SlackChat:
    fake: FakeSlack
    adapter: SlackAdapter
    gateway: Gateway
    server: Server | None

    @property
    def events_url(self) -> str:
        assert self.server is not None, "HTTP mode only"
        return f"{self.server.url}/slack/events"

    def bot_texts(self, channel: str = DM, thread: str | None = None) -> list[str]:
        """What the bot shows in a channel/thread right now (placeholders included)."""
        return [m.get("text", "") for m in self.fake.messages.get((channel, thread), []) if m.get("bot_id")]

    def posts(self, predicate: Callable[[str], bool], channel: str | None = None) -> list[Call]:
        """chat.postMessage calls (failed ones too) whose text matches."""
        return [c for c in self.fake.calls_to("chat.postMessage")
                if predicate(str(c.params.get("text", ""))) and (channel is None or c.params.get("channel") == channel)]

    def session(self, channel: str = DM, thread: str | None = None):
        return self.gateway.sessions.find("slack", channel, thread)

    def children(self) -> int:
        children = self.gateway.host.children
        return sum(len(children.children(s.session_id)) for s in self.gateway.sessions)

    async def answered(self, channel: str = DM, thread: str | None = None, count: int = 1,
                       timeout: float = 5.0, settle: bool = True) -> list[str]:
        """Wait for ``count`` bot messages and no placeholder left, then (unless ``settle`` is
        False, for a check a later settled one covers) settle; returns the texts."""
        await self.fake.wait_for(lambda: PLACEHOLDER not in self.bot_texts(channel, thread)
                                 and len(self.bot_texts(channel, thread)) >= count, timeout)
        if settle:
            await settled(self.gateway)
        return self.bot_texts(channel, thread)


StartChat = Callable[..., Awaitable[SlackChat]]


@pytest.fixture
async def slack_chat(tmp_path) -> AsyncIterator[StartChat]:
    """Start a fake Slack, a SlackAdapter on it (``mode`` socket or http) and a gateway with that
    adapter (HTTP mode: on the gateway's own HTTP server); all stopped cleanly afterwards. ``llm``
    is the parent model object (``script`` builds a ScriptedModel; neither: the demo model);
    other keywords are config sections for `make_config`."""
    running: list[tuple[FakeSlack, Gateway | None, Server | None]] = []

    async def start(*, mode: str = "socket", llm: Any = None, script: Any = None,
                    slack: dict[str, Any] | None = None, **sections: Any) -> SlackChat:
        fake = await FakeSlack(signing_secret=SECRET if mode == "http" else None).start()
        running.append((fake, None, None))
        config = make_config(tmp_path, platforms={"slack": slack or {"allow_all": True}}, **sections)
        if mode == "socket":
            adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                                   ping_interval=0.2)
        else:
            adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET,
                                   api_base=fake.api_base)
        gateway = await start_gateway(config, [adapter], model=llm, script=script)
        server = Server(gateway, "127.0.0.1", 0) if mode == "http" else None
        running[-1] = (fake, gateway, server)
        if server is not None:
            await server.start()
            fake.events_url = f"{server.url}/slack/events"  # no Socket Mode connection: events come over HTTP
        return SlackChat(fake, adapter, gateway, server)

    yield start
    for fake, gateway, server in running:
        if gateway is not None:
            await gateway.stop(grace=0)
        if server is not None:
            await server.stop()
        await fake.close()


# -- 1. DM turns: inline and background, with the progress placeholder ------------------------


async def test_dm_inline_turn_is_one_message_and_the_placeholder_shows_while_it_runs(slack_chat):
    chat = await slack_chat(display={"interim_assistant_messages": False},
                            model={"demo": {"child_steps": 1, "step_seconds": 0.2}})
    await chat.fake.push_dm("U1", LIST)
    # The placeholder is up while the turn (and its subagents) run...
    await chat.fake.wait_for(lambda: PLACEHOLDER in chat.bot_texts()
                             and session_key("slack", DM, None) in chat.gateway.sessions
                             and chat.session().running is not None)
    assert chat.session().mode == "inline"
    # ...and gone afterwards, leaving exactly one reply.
    [reply] = await chat.answered()
    assert "apples: completed" in reply and "pears: completed" in reply
    assert len(chat.posts(lambda t: t == PLACEHOLDER)) == 1
    assert len(chat.fake.calls_to("chat.delete")) == 1
    assert chat.fake.ephemeral == []


async def test_dm_background_turn_is_two_messages_and_no_placeholder_is_left(slack_chat):
    chat = await slack_chat(display={"interim_assistant_messages": True},
                            model={"demo": {"child_steps": 1, "step_seconds": 0.1}})
    await chat.fake.push_dm("U1", LIST)
    ack, results = await chat.answered(count=2)
    assert chat.session().mode == "background"
    assert "Started 2 subagent" in ack
    assert "apples: completed" in results and "pears: completed" in results
    # A placeholder for the user's turn (the results turn may finish before its first typing
    # refresh runs); every one posted was deleted.
    placeholders = chat.posts(lambda t: t == PLACEHOLDER)
    assert len(placeholders) >= 1 and len(chat.fake.calls_to("chat.delete")) == len(placeholders)
    assert chat.bot_texts() == [ack, results]


# -- 2. and 3. channels: thread sessions and mention filtering ---------------------------------


async def test_mentions_start_thread_sessions_and_replies_land_in_their_thread(slack_chat):
    chat = await slack_chat(script={"parent": echo})
    first = await chat.fake.push_mention("C1", "U1", "first question")
    ts1 = first["event"]["ts"]
    assert await chat.answered("C1", ts1, settle=False) == ["re: first question"]
    reply_call = chat.posts(lambda t: t == "re: first question")[0]
    assert reply_call.params["channel"] == "C1" and reply_call.params["thread_ts"] == ts1

    second = await chat.fake.push_mention("C1", "U1", "second question")
    ts2 = second["event"]["ts"]
    assert ts2 != ts1
    assert await chat.answered("C1", ts2, settle=False) == ["re: second question"]
    keys = {session_key("slack", "C1", ts1), session_key("slack", "C1", ts2)}
    assert chat.gateway.sessions.keys() == keys
    assert chat.session("C1", ts1).session_id != chat.session("C1", ts2).session_id

    # A follow-up in the bot's thread needs no mention and stays in that thread's session.
    await chat.fake.push_message("C1", "U1", "and a follow-up", thread_ts=ts1)
    assert await chat.answered("C1", ts1, count=2) == ["re: first question", "re: and a follow-up"]
    assert chat.gateway.sessions.keys() == keys
    assert chat.bot_texts("C1") == []  # nothing at the channel's top level
    assert chat.bot_texts("C1", ts2) == ["re: second question"]


async def test_unmentioned_channel_messages_get_no_reply(slack_chat):
    model = ScriptedModel({"parent": echo})
    chat = await slack_chat(llm=model)
    await chat.fake.push_message("C1", "U1", "just chatting, not to the bot")
    await chat.fake.push_message("C1", "U1", "a reply in someone else's thread", thread_ts="1700000000.000009")
    await chat.fake.wait_for(lambda: len(chat.fake.acks) == 2)
    await settled(chat.gateway)
    assert chat.fake.calls_to("chat.postMessage") == []
    assert model.requests == [] and len(chat.gateway.sessions) == 0

    # The same channel with a mention is answered: the silence above was the filter.
    body = await chat.fake.push_mention("C1", "U1", "now to you")
    assert await chat.answered("C1", body["event"]["ts"]) == ["re: now to you"]
    assert len(model.requests) == 1


async def test_a_bot_thread_needs_no_mention_after_a_gateway_restart(tmp_path):
    fake = await FakeSlack().start()
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})

    async def gateway() -> Gateway:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2)
        return await start_gateway(config, [adapter], script={"parent": echo})

    chat = SlackChat(fake, None, await gateway(), None)  # type: ignore[arg-type]
    try:
        ts = (await fake.push_mention("C1", "U1", "first question"))["event"]["ts"]
        assert await chat.answered("C1", ts, settle=False) == ["re: first question"]
        await chat.gateway.stop(grace=0)
        chat.gateway = await gateway()  # a new process would know the thread only from the database
        await fake.push_message("C1", "U1", "a follow-up, no mention", thread_ts=ts)
        assert await chat.answered("C1", ts, count=2) == ["re: first question", "re: a follow-up, no mention"]
    finally:
        await chat.gateway.stop(grace=0)
        await fake.close()


async def test_a_command_answered_in_a_thread_does_not_put_the_bot_in_it(tmp_path):
    """``!help`` in people's thread (meant for another bot, say) is answered there; what they
    write after it is still not for the bot, also after a restart."""
    fake = await FakeSlack().start()
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
    model = ScriptedModel({"parent": echo})

    async def gateway() -> Gateway:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2)
        return await start_gateway(config, [adapter], model=model)

    def handed_over() -> bool:  # an envelope is acked once the adapter has handed its message over, or not
        return all(e.acked for e in fake.envelopes.values())

    thread = "1700000000.000300"
    chat = SlackChat(fake, None, await gateway(), None)  # type: ignore[arg-type]
    try:
        await fake.push_message("C1", "U1", "!help", thread_ts=thread)
        [help_text] = await chat.answered("C1", thread)
        await fake.push_message("C1", "U2", "that was for the other bot", thread_ts=thread)
        await fake.wait_for(handed_over)
        await settled(chat.gateway)
        await chat.gateway.stop(grace=0)
        chat.gateway = await gateway()
        await fake.push_message("C1", "U2", "still not for you", thread_ts=thread)
        await fake.wait_for(handed_over)
        await settled(chat.gateway)
        assert chat.bot_texts("C1", thread) == [help_text] and model.requests == []
    finally:
        await chat.gateway.stop(grace=0)
        await fake.close()


# -- 4. long-running notices ------------------------------------------------------------------


def notice_posts(chat: SlackChat) -> list[Call]:
    return chat.posts(lambda t: t.startswith("⏳"))


async def test_notices_are_posted_once_then_updated_in_place_and_none_follow_the_reply(slack_chat):
    # The notice goes a second after the placeholder (one message a second per channel), its edits a
    # second apart: a turn of 2.6 s shows one progress edit, then the outcome.
    chat = await slack_chat(agent={"gateway_notify_interval": 0.1}, display={"progress": "off"},
                            script=slow(2.6))
    await chat.fake.push_dm("U1", "work slowly")
    await chat.fake.wait_for(lambda: "finished" in chat.bot_texts(), timeout=REAL_TURN_WAIT)
    texts = await chat.answered(count=2)
    [post] = notice_posts(chat)
    updates = chat.fake.calls_to("chat.update")
    assert len(updates) >= 2
    [ts] = {u.params["ts"] for u in updates}
    assert all(u.params["channel"] == DM for u in updates)
    sent_texts = [post.params["text"], *(u.params["text"] for u in updates[:-1])]
    assert all(t.startswith("⏳") for t in sent_texts)
    assert len(set(sent_texts)) == len(sent_texts)  # every notice reads differently
    assert updates[-1].params["text"].startswith("✓ Done in")  # finalised when the turn ended
    assert texts == [updates[-1].params["text"], "finished"]
    # After the final reply, only the notice's one-line outcome and the placeholder's deletion.
    reply_at = chat.fake.calls.index(chat.posts(lambda t: t == "finished")[0])
    assert all(chat.fake.calls.index(u) < reply_at for u in updates[:-1])
    after = chat.fake.calls[reply_at + 1:]
    assert {c.method for c in after} <= {"chat.delete", "chat.update"}
    assert [c.params["text"] for c in after if c.method == "chat.update"] in ([], [updates[-1].params["text"]])


# -- 5. slash commands over both transports -----------------------------------------------------


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_slash_stop_and_new_are_answered_ephemerally_once(slack_chat, mode):
    model = ScriptedModel({"parent": [[{"hang": True}]]})
    chat = await slack_chat(mode=mode, llm=model)
    await chat.fake.push_dm("U1", "start something long")
    await chat.fake.wait_for(lambda: PLACEHOLDER in chat.bot_texts())  # the turn is running

    await chat.fake.push_slash_command("/stop", "U1", DM)
    await chat.fake.wait_for(lambda: len(chat.fake.ephemeral) == 1)
    await chat.fake.push_slash_command("/new", "U1", DM)
    await chat.fake.wait_for(lambda: len(chat.fake.ephemeral) == 2)
    assert await chat.answered(count=0) == []  # no reply from the stopped turn, placeholder removed

    stop, new = chat.fake.ephemeral
    assert stop["text"].startswith("Stopped the running turn") and new["text"].startswith("Started a new session")
    assert {e["via"] for e in chat.fake.ephemeral} == {"response_url"}
    assert {e["response_type"] for e in chat.fake.ephemeral} == {"ephemeral"}
    assert chat.posts(lambda t: t != PLACEHOLDER) == [] and chat.fake.calls_to("chat.postEphemeral") == []
    assert len(model.requests) == 1 and chat.session().generation == 2
    if mode == "http":
        commands = [r for r in chat.fake.http_results if r.text == ""]
        assert len(commands) >= 2 and all(r.status == 200 for r in chat.fake.http_results)
    else:
        commands = [e for e in chat.fake.envelopes.values() if e.type == "slash_commands"]
        assert len(commands) == 2 and all(e.acked for e in commands)


SLOW_STOP_HOOK = """
import asyncio

stopping = asyncio.Event()
release = asyncio.Event()


async def on_stop(**event):
    stopping.set()
    await release.wait()  # a plugin's subagent_stop hook taking its time (filing a report, say)


def register(ctx):
    ctx.register_hook("subagent_stop", on_stop)
"""


def delegating_echo(request: ModelRequest) -> dict:
    last = request.messages[-1]
    if last["role"] != "user":
        return {"text": "on it"}
    if "delegat" in str(last["content"]):
        return {"tool_calls": [{"name": "delegate_task", "arguments": HANGING_CHILDREN}]}
    return {"text": f"re: {last['content']}"}


async def test_a_message_sent_right_after_new_with_text_is_answered_after_that_text(slack_chat, tmp_path,
                                                                                    monkeypatch):
    # Slack hands events over concurrently: the second message reaches the gateway while /new is
    # still withdrawing the chat's waiting child (a plugin's subagent_stop hook takes its time).
    plugin = plugin_module(tmp_path, monkeypatch, "slow_stop_hook", SLOW_STOP_HOOK)
    model = ScriptedModel({"parent": delegating_echo, "leaf": hanging_child})
    chat = await slack_chat(llm=model, plugins=["slow_stop_hook"], lifecycle={"max_running": 1},
                            display={"busy_input_mode": "queue"})
    await chat.fake.push_dm("U1", "please delegate this")
    async with asyncio.timeout(5):
        await model.reached(HANGING_CHILDREN["tasks"][0]["goal"])  # the first runs, the second waits for a slot
    assert await chat.answered(settle=False) == ["on it"]

    await chat.fake.push_dm("U1", "!new first")
    async with asyncio.timeout(5):
        await plugin.stopping.wait()  # /new is withdrawing the waiting child
    second = await chat.fake.push_dm("U1", "second")
    inbox = chat.gateway.store.inbox
    await chat.fake.wait_for(lambda: inbox.received_at("slack", f"{DM}:{second['event']['ts']}") is not None)
    plugin.release.set()

    texts = await chat.answered(count=4)
    assert texts[1].startswith("Started a new session and ended 2 subagents")
    assert texts[2:] == ["re: first", "re: second"]


# -- 6. !stop in a thread during an inline delegation ----------------------------------------


async def test_bang_stop_in_a_thread_stops_inline_delegation_with_one_confirmation(slack_chat):
    model = ScriptedModel({"parent": delegating_parent, "leaf": hanging_child})
    chat = await slack_chat(llm=model, display={"interim_assistant_messages": False})
    body = await chat.fake.push_mention("C1", "U1", "please delegate this")
    ts = body["event"]["ts"]
    await children_hanging(model)
    assert chat.session("C1", ts).mode == "inline"

    await chat.fake.push_message("C1", "U1", "!stop", thread_ts=ts)  # no slash commands in threads
    [confirmation] = await chat.answered("C1", ts)
    assert confirmation.startswith("Stopped the running turn and 2 subagents")
    assert chat.bot_texts("C1") == [] and chat.fake.ephemeral == []
    session = chat.session("C1", ts)
    assert session.running is None
    recent = chat.gateway.host.children.recent(session.session_id)
    assert [c.state.value for c in recent] == ["INTERRUPTED", "INTERRUPTED"]
    assert not any(r.role == "parent" and r.iteration > 0 for r in model.requests)  # the parent never resumed


async def test_every_alias_of_a_command_is_heard_in_a_thread_the_bot_is_not_in(slack_chat):
    # /reset is /new: typed as text where the bot has not joined the thread, it must reach the gateway too.
    chat = await slack_chat(script={"parent": echo})
    await chat.fake.push_message("C1", "U1", "!reset", thread_ts="1700000000.000100")
    await chat.fake.push_message("C1", "U1", "!Reset plan the trip", thread_ts="1700000000.000200")
    [started] = await chat.answered("C1", "1700000000.000100")
    assert started.startswith("Started a new session")
    [started, reply] = await chat.answered("C1", "1700000000.000200", count=2)
    assert started.startswith("Started a new session") and reply == "re: plan the trip"


# -- 7. signatures on the gateway's HTTP server ----------------------------------------------


def dm_event(event_id: str, text: str, ts: str | None = None) -> dict[str, Any]:
    ts = ts or f"{time.time():.6f}"
    return {"token": "fake-verification-token", "team_id": "T0FAKE", "api_app_id": "A0FAKE",
            "type": "event_callback", "event_id": event_id, "event_time": int(time.time()),
            "event": {"type": "message", "channel": DM, "channel_type": "im", "user": "U1", "ts": ts,
                      "text": text, "event_ts": ts}}


async def test_http_signatures_are_checked_and_url_verification_is_answered(slack_chat):
    model = ScriptedModel({"parent": echo})
    chat = await slack_chat(mode="http", llm=model)
    url, fake = chat.events_url, chat.fake

    wrong = await fake.send_http_event(url, dm_event("EvWrong", "forged"), "not-the-secret")
    stale = await fake.send_http_event(url, dm_event("EvStale", "replayed"), SECRET,
                                       timestamp=int(time.time()) - 400)
    assert (wrong.status, stale.status) == (401, 401)
    challenge = await fake.send_http_event(url, {"type": "url_verification", "challenge": "c-42", "token": "t"},
                                           SECRET)
    assert challenge.status == 200 and challenge.json() == {"challenge": "c-42"}
    await settled(chat.gateway)
    assert model.requests == [] and len(chat.gateway.sessions) == 0 and fake.calls_to("chat.postMessage") == []

    right = await fake.send_http_event(url, dm_event("EvRight", "signed properly"), SECRET)
    assert right.status == 200
    assert await chat.answered() == ["re: signed properly"]
    assert len(model.requests) == 1


# -- 8. redelivered events are deduplicated ----------------------------------------------------


async def test_http_event_retries_are_one_turn_and_one_reply(slack_chat):
    model = ScriptedModel({"parent": [[{"text": "once"}], [{"text": "twice"}]]})
    chat = await slack_chat(mode="http", llm=model)
    body = await chat.fake.push_dm("U1", "hello")
    assert chat.fake.http_results[-1].status == 200
    for retry in (1, 2):
        retried = await chat.fake.send_http_event(chat.events_url, body, SECRET, retry_num=retry)
        assert retried.status == 200
    assert await chat.answered() == ["once"]
    assert len(model.requests) == 1


async def test_socket_mode_redelivery_is_one_turn_and_one_reply(slack_chat):
    model = ScriptedModel({"parent": [[{"text": "once"}], [{"text": "twice"}]]})
    chat = await slack_chat(llm=model)
    chat.fake.ack_timeout = 0.2
    chat.fake.lose_next_ack()
    body = await chat.fake.push_dm("U1", "hello")
    [envelope] = [e for e in chat.fake.envelopes.values() if e.payload.get("event_id") == body["event_id"]]
    await chat.fake.wait_for(lambda: envelope.retry_attempt >= 1 and envelope.acked)
    assert len(envelope.deliveries) >= 2
    assert await chat.answered() == ["once"]
    assert len(model.requests) == 1


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_one_message_slack_sends_again_as_a_new_event_is_one_turn_and_one_reply(slack_chat, mode):
    # Slack has sent one message as several events, each with an event_id of its own and no retry
    # header (node-slack-sdk#2141: up to 11); the message's channel and ts stay the same.
    model = ScriptedModel({"parent": [[{"text": "once"}], [{"text": "twice"}]]})
    chat = await slack_chat(mode=mode, llm=model)
    body = await chat.fake.push_dm("U1", "hello")
    assert await chat.answered(settle=False) == ["once"]
    again = await chat.fake.push_event(body["event"])
    assert again["event_id"] != body["event_id"]
    assert await chat.answered() == ["once"]
    assert len(model.requests) == 1


# -- 9. Socket Mode reconnects ----------------------------------------------------------------


@pytest.mark.parametrize("cut", ["disconnect", "drop"])
async def test_after_a_reconnect_one_message_gets_exactly_one_reply(slack_chat, cut):
    model = ScriptedModel({"parent": echo})
    chat = await slack_chat(llm=model)
    fake = chat.fake
    await fake.push_dm("U1", "before")
    assert await chat.answered(settle=False) == ["re: before"]
    if cut == "disconnect":
        await fake.disconnect()
    else:
        fake.drop_socket()
    await fake.wait_for(lambda: len(fake.connections) == 2 and len(fake.open_connections) == 1)
    body = await fake.push_dm("U1", "after")
    assert await chat.answered(count=2) == ["re: before", "re: after"]
    assert len(model.requests) == 2
    assert [c.id for c in fake.open_connections] == [2]
    [envelope] = [e for e in fake.envelopes.values() if e.payload.get("event_id") == body["event_id"]]
    assert envelope.deliveries == [2] and envelope.acked
    assert [a.connection for a in fake.acks if a.envelope_id == envelope.envelope_id] == [2]


async def test_a_second_gateway_on_the_same_app_token_is_named_in_its_log(slack_chat, tmp_path, caplog):
    # Slack hands each event to one of an app's Socket Mode connections: two gateways on one app
    # token (two state directories, so the state lock cannot tell) each answer part of a chat.
    chat = await slack_chat(script={"parent": echo})
    assert not [r for r in caplog.records if "same app token" in r.getMessage()]
    adapter = SlackAdapter(bot_token=chat.fake.bot_token, app_token=chat.fake.app_token, api_base=chat.fake.api_base,
                           ping_interval=0.2)
    config = make_config(tmp_path / "other", platforms={"slack": {"allow_all": True}})
    second = await start_gateway(config, [adapter], script={"parent": echo})
    try:
        [warned] = await chat.fake.wait_for(lambda: [r for r in caplog.records if "same app token" in r.getMessage()])
        assert warned.levelno == logging.ERROR
        assert "2 Socket Mode connections" in warned.getMessage()
        assert chat.fake.app_token not in warned.getMessage()
    finally:
        await second.stop(grace=0)


# -- 10. rate limits and vanished messages -----------------------------------------------------


async def test_429_on_post_message_is_retried_and_the_reply_arrives_once(slack_chat):
    chat = await slack_chat(script=slow(0.3, "worth the wait"))
    await chat.fake.push_dm("U1", "hello")
    await chat.fake.wait_for(lambda: PLACEHOLDER in chat.bot_texts())
    chat.fake.fail_next("chat.postMessage", status=429, retry_after=1)  # hits the reply, not the placeholder
    started = time.monotonic()
    await chat.fake.wait_for(lambda: "worth the wait" in chat.bot_texts())
    assert time.monotonic() - started >= 0.9  # Retry-After was honoured
    assert await chat.answered() == ["worth the wait"]
    assert len(chat.posts(lambda t: t == "worth the wait")) == 2  # the 429'd attempt and the retry


@pytest.mark.parametrize(("error", "arrived"), [("not_in_channel", 0), ("invalid_blocks", 1)])
async def test_a_reply_slack_refuses_is_one_warning_not_two(slack_chat, caplog, error, arrived):
    # The adapter warned of the refusal, and the outbox of the part it failed; a formatting Slack refused
    # (the part then sent as plain text) was a warning of the refusal and one of the fallback.
    caplog.set_level(logging.INFO)
    chat = await slack_chat(script=slow(0.3, "**bold** reply"))
    await chat.fake.push_dm("U1", "hello")
    await chat.fake.wait_for(lambda: PLACEHOLDER in chat.bot_texts())
    chat.fake.fail_next("chat.postMessage", error)  # hits the reply, not the placeholder
    await chat.fake.wait_for(lambda: chat.posts(lambda t: "bold" in t))
    assert len(await chat.answered(count=0)) == arrived
    [warning] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert DM in warning and error in warning, warning  # the channel, and Slack's words


async def test_429_on_update_is_retried_and_the_notice_still_arrives_once(slack_chat):
    chat = await slack_chat(agent={"gateway_notify_interval": 0.1}, display={"progress": "off"},
                            script=slow(1.45))  # its notice goes a second after the placeholder
    chat.fake.fail_next("chat.update", status=429, retry_after=1)  # nothing but notices calls chat.update
    await chat.fake.push_dm("U1", "work slowly")
    await chat.fake.wait_for(lambda: "finished" in chat.bot_texts(), timeout=REAL_TURN_WAIT)
    texts = await chat.answered(count=2)
    [post] = notice_posts(chat)
    updates = chat.fake.calls_to("chat.update")
    assert len(updates) >= 2  # the refused one, then the newest text: in place, no new message
    assert len({u.params["ts"] for u in updates}) == 1 and len(notice_posts(chat)) == 1
    assert updates[-1].params["text"].startswith("✓ Done in")
    assert texts == [updates[-1].params["text"], "finished"]


async def test_message_not_found_on_update_falls_back_to_a_new_message(slack_chat):
    chat = await slack_chat(agent={"gateway_notify_interval": 0.1}, display={"progress": "off"},
                            script=slow(3.6))  # a message a second: placeholder, notice, edit, the notice anew
    chat.fake.fail_next("chat.update", "message_not_found")
    await chat.fake.push_dm("U1", "work slowly")
    await chat.fake.wait_for(lambda: "finished" in chat.bot_texts(), timeout=REAL_TURN_WAIT)
    texts = await chat.answered(count=3)
    first, fallback = notice_posts(chat)
    failed, *later = chat.fake.calls_to("chat.update")
    assert fallback.params["text"] == failed.params["text"]  # the refused edit, sent anew
    [fallback_ts] = {u.params["ts"] for u in later}  # later notices edit the new message
    assert fallback_ts != failed.params["ts"] and later[-1].params["text"].startswith("✓ Done in")
    assert texts == [first.params["text"], later[-1].params["text"], "finished"]


async def test_an_uninstalled_app_makes_healthz_say_slack_is_down(slack_chat):
    # Over HTTP the gateway holds no connection: without Slack's app_uninstalled event /healthz
    # said all was well while every reply failed.
    chat = await slack_chat(mode="http")
    await chat.fake.push_event({"type": "app_uninstalled"})
    await chat.fake.wait_for(lambda: chat.adapter.connection().status == "down")
    async with aiohttp.ClientSession() as http, http.get(f"{chat.server.url}/healthz") as response:
        health = await response.json()
    assert response.status == 503 and health["down"] == ["slack"]
    assert "app_uninstalled" in health["connections"]["slack"]["reason"]


# -- 11. access control -----------------------------------------------------------------------


async def test_a_stranger_gets_one_refusal_and_nothing_runs(slack_chat):
    model = ScriptedModel({"parent": echo})
    chat = await slack_chat(llm=model, slack={"allowed_users": ["U1"]})
    await chat.fake.push_dm("U2", "let me in")
    [refusal] = await chat.answered("DU2", settle=False)
    assert "only answers people" in refusal and "U2" in refusal
    body = await chat.fake.push_mention("C1", "U2", "let me in here too")
    [refusal_in_thread] = await chat.answered("C1", body["event"]["ts"], settle=False)
    assert "only answers people" in refusal_in_thread
    await chat.fake.push_slash_command("/new", "U2", "DU2")  # commands are refused too, ephemerally
    await chat.fake.wait_for(lambda: len(chat.fake.ephemeral) == 1)
    assert "only answers people" in chat.fake.ephemeral[0]["text"]
    assert model.requests == []
    assert chat.posts(lambda t: t == PLACEHOLDER) == []  # no turn, so no progress placeholder either

    await chat.fake.push_dm("U1", "hello")  # the allowed user is served
    assert await chat.answered(DM) == ["re: hello"]
    assert len(model.requests) == 1
    assert chat.bot_texts("DU2") == [refusal] and chat.bot_texts("C1", body["event"]["ts"]) == [refusal_in_thread]
    assert len(chat.fake.ephemeral) == 1
    assert chat.session("DU2") is None  # the refused /new did not run: a stranger's chat has no session at all


async def test_a_stranger_talking_in_the_bots_thread_is_refused_once_not_at_every_message(slack_chat):
    # Once the bot is in a thread it hears every reply there: a stranger talking to the others in
    # it was refused at each of their messages, a bot message under each of theirs.
    model = ScriptedModel({"parent": echo})
    chat = await slack_chat(llm=model, slack={"allowed_users": ["U1"]})
    thread = (await chat.fake.push_mention("C1", "U1", "help us plan"))["event"]["ts"]
    assert await chat.answered("C1", thread) == ["re: help us plan"]
    pushed = [(await chat.fake.push_message("C1", "U2", f"what do you all think, {n}?", thread_ts=thread))
              for n in range(3)]
    await chat.fake.wait_for(lambda: all(e.acked for e in chat.fake.envelopes.values() if e.payload in pushed))
    [_, refusal] = await chat.answered("C1", thread, count=2)
    assert "only answers people" in refusal and "U2" in refusal
    await chat.fake.push_message("C1", "U3", "me neither?", thread_ts=thread)  # another stranger is told too
    await chat.fake.push_dm("U2", "let me in")  # and so is U2 in another chat
    assert len(await chat.answered("C1", thread, count=3)) == 3
    assert len(await chat.answered("DU2")) == 1
    await chat.fake.push_slash_command("/new", "U2", "DU2")  # a slash command is always answered
    await chat.fake.wait_for(lambda: len(chat.fake.ephemeral) == 1)
    assert len(model.requests) == 1


async def test_a_slash_command_is_allowed_by_user_id_not_by_the_name_it_carries(slack_chat):
    # A slash command's user_name is a name Slack says not to rely on (not unique, going away):
    # a stranger's that reads like an allowed entry lets them in no more than a message would.
    chat = await slack_chat(llm=ScriptedModel({"parent": echo}), slack={"allowed_users": ["U1", "alice"]})
    await chat.fake.push_slash_command("/new", "U2", "DU2", user_name="alice")
    await chat.fake.push_slash_command("/new", "U3", "DU3", user_name="u1")
    await chat.fake.wait_for(lambda: len(chat.fake.ephemeral) == 2)
    assert all("only answers people" in e["text"] for e in chat.fake.ephemeral)
    assert chat.session("DU2") is chat.session("DU3") is None  # the /new ran in neither
