"""End to end on Discord: the real discord.py client inside `DiscordAdapter`, talking to
`FakeDiscord` over loopback (REST and the gateway WebSocket), with the real `Gateway`.

Every chat here is observed where a user would see it: the messages the fake stored
in a channel, the REST calls the bot made, and the interaction responses."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.discord import FLAG_LOADING, FakeDiscord, FakeMessage
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.hanging_children import children_hanging, delegating_parent, hanging_child

SEND = "POST /channels/{channel_id}/messages"
EDIT = "PATCH /channels/{channel_id}/messages/{message_id}"
TYPING = "POST /channels/{channel_id}/typing"
CALLBACK = "POST /interactions/{interaction_id}/{token}/callback"
ANSWER = "PATCH /webhooks/{application_id}/{token}/messages/{message_id}"
FOLLOW_UP = "POST /webhooks/{application_id}/{token}"
SILENT = 1 << 12  # SUPPRESS_NOTIFICATIONS: 4096
GUILD, CHANNEL, USER, STRANGER = 500, 600, 42, 999
LIST = "Compare these:\n- apples\n- pears"

Start = Callable[..., Awaitable[Gateway]]


# ---- fixtures ----------------------------------------------------------------------------------


fake = fake_discord()


@pytest.fixture
async def start(tmp_path, fake: FakeDiscord) -> AsyncIterator[Start]:
    """Starts the gateway with a DiscordAdapter pointed at the fake; stops both cleanly."""
    started: list[Gateway] = []

    async def start_(*, model=None, script=None, discord=None, demo=None, home=None, **sections) -> Gateway:
        """``home``: a folder for the state directory other than the test's (a second gateway)."""
        if demo is not None:
            sections["model"] = {"demo": demo}
        config = make_config(home or tmp_path, platforms={"discord": discord or {"allow_all": True}}, **sections)
        adapter = adapter_for(fake)
        gateway = await start_gateway(config, [adapter], model=model, script=script)
        started.append(gateway)
        return gateway

    async def quiet() -> None:
        """Nothing more will arrive. Events reach the client in order, so once the last pushed
        event's effect was seen, settling the gateways is enough."""
        for gateway in started:
            await settled(gateway)

    async def stop_all() -> None:
        """Stop every gateway started so far, as a process exit would."""
        while started:
            await started.pop().stop(grace=0)

    start_.quiet = quiet  # type: ignore[attr-defined]
    start_.stop_all = stop_all  # type: ignore[attr-defined]
    try:
        yield start_
    finally:
        await stop_all()
        await join_heartbeat_threads()


# ---- helpers -----------------------------------------------------------------------------------


def contents(messages: list[FakeMessage]) -> list[str]:
    return [m.content for m in messages]


def in_channel(fake: FakeDiscord, route: str, channel: str | int) -> list:
    return [c for c in fake.calls_to(route) if c.path.startswith(f"/channels/{channel}/")]


def for_token(fake: FakeDiscord, route: str, interaction_id: str) -> list:
    token = fake.interactions[interaction_id]["token"]
    return [c for c in fake.calls_to(route) if f"/{token}" in c.path]


SENDER = r"^\[@[^\]]+\] "


def echo_script(prefix: str = "echo") -> dict:
    """A parent that answers every user message with ``<prefix>: <text>``, without the sender's
    name a guild channel's message comes with (`gateway.senders`)."""
    def parent(request: ModelRequest) -> dict:
        return {"text": f"{prefix}: {re.sub(SENDER, '', request.messages[-1]['content'])}"}
    return {"parent": parent}


def fence_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.match(r"^ {0,3}```", line)]


# ---- 1. DM turns: inline and background ----------------------------------------------------------


async def test_dm_inline_delegation_is_one_message_with_typing_while_it_runs(fake, start):
    await start(display={"interim_assistant_messages": False},
                demo={"child_steps": 2, "step_seconds": 0.05})
    asked = fake.push_dm(USER, LIST)
    dm = fake.dm_channel(USER)
    await fake.wait_for(lambda: fake.bot_messages(dm))
    await start.quiet()
    [reply] = fake.bot_messages(dm)
    assert reply.content.startswith("[demo]")
    assert "apples: completed" in reply.content and "pears: completed" in reply.content
    # typing was shown while the turn ran: after the user's message, before the reply was posted
    [send] = in_channel(fake, SEND, dm)
    typing = in_channel(fake, TYPING, dm)
    assert typing and typing[0].at < send.at and typing[0].status == 204
    assert fake.messages[dm][0].id == asked


async def test_dm_background_delegation_is_two_messages(fake, start):
    gateway = await start(display={"interim_assistant_messages": True},
                          demo={"child_steps": 2, "step_seconds": 0.05})
    fake.push_dm(USER, LIST)
    dm = fake.dm_channel(USER)
    await fake.wait_for(lambda: len(fake.bot_messages(dm)) >= 2)
    await start.quiet()
    ack, answer = fake.bot_messages(dm)
    assert "Started 2 subagent" in ack.content
    assert "apples: completed" in answer.content and "pears: completed" in answer.content
    assert [s.mode for s in gateway.sessions] == ["background"]
    assert in_channel(fake, TYPING, dm)  # the first turn lasts long enough to show typing at least once


# ---- 2. guild mention filtering ----------------------------------------------------------------


async def test_guild_messages_are_answered_only_when_they_mention_the_bot(fake, start):
    model = ScriptedModel(echo_script())
    await start(model=model)
    fake.push_guild_message(GUILD, CHANNEL, USER, "just chatting among ourselves")
    fake.push_guild_message(GUILD, CHANNEL, USER, "what's up?", mention_bot=True)
    await fake.wait_for(lambda: fake.bot_messages(CHANNEL))
    await start.quiet()
    assert contents(fake.bot_messages(CHANNEL)) == ["echo: what's up?"]  # mention stripped from the text
    assert len(model.requests) == 1


# ---- 3. threads are sessions -------------------------------------------------------------------


async def test_each_thread_is_its_own_session_and_replies_land_in_it(fake, start):
    gateway = await start(script=echo_script())
    fake.push_guild_message(GUILD, CHANNEL, USER, "question in A", mention_bot=True, thread_id=701)
    fake.push_guild_message(GUILD, CHANNEL, USER, "question in B", mention_bot=True, thread_id=702)
    await fake.wait_for(lambda: fake.bot_messages(701) and fake.bot_messages(702))
    # a follow-up in A needs no mention any more (the bot posted there) and stays in A's session
    fake.push_guild_message(GUILD, CHANNEL, USER, "follow-up in A", thread_id=701)
    await fake.wait_for(lambda: len(fake.bot_messages(701)) == 2)
    await start.quiet()
    assert contents(fake.bot_messages(701)) == ["echo: question in A", "echo: follow-up in A"]
    assert contents(fake.bot_messages(702)) == ["echo: question in B"]
    assert fake.bot_messages(CHANNEL) == []
    sessions = {(s.chat_id, s.thread_id): s for s in gateway.sessions}
    assert set(sessions) == {(str(CHANNEL), "701"), (str(CHANNEL), "702")}
    transcript_a = [m["content"] for m in sessions[(str(CHANNEL), "701")].agent.messages if m["role"] == "user"]
    assert transcript_a == ["[@user42] question in A", "[@user42] follow-up in A"]  # a thread: with who said it


async def test_a_thread_the_bot_posted_in_needs_no_mention_after_a_gateway_restart(fake, start):
    await start(script=echo_script())
    fake.push_guild_message(GUILD, CHANNEL, USER, "first question", mention_bot=True, thread_id=701)
    await fake.wait_for(lambda: fake.bot_messages(701))
    await start.quiet()
    await start.stop_all()
    await start(script=echo_script())  # a new process knows the thread only from the database
    fake.push_guild_message(GUILD, CHANNEL, USER, "a follow-up, no mention", thread_id=701)
    await fake.wait_for(lambda: len(fake.bot_messages(701)) == 2)
    assert contents(fake.bot_messages(701)) == ["echo: first question", "echo: a follow-up, no mention"]


# ---- 4. long-running notices --------------------------------------------------------------------


async def test_notices_are_silent_edited_in_place_and_none_follow_the_reply(fake, start):
    await start(agent={"gateway_notify_interval": 0.1}, display={"progress": "off"},
                script={"parent": [[{"sleep": 0.45, "text": "finished"}]]})
    fake.push_dm(USER, "work slowly")
    dm = fake.dm_channel(USER)
    await fake.wait_for(lambda: "finished" in contents(fake.bot_messages(dm)))
    await start.quiet()
    notice, reply = fake.bot_messages(dm)
    assert notice.flags & SILENT and not reply.flags & SILENT
    assert reply.content == "finished"
    assert notice.content.startswith("✓ Done in") and notice.edits  # finalised: nothing stale
    texts = notice.edits  # what it read before, in order
    assert all(t.startswith("⏳ Working — ") for t in texts) and len(set(texts)) == len(texts)
    edits = in_channel(fake, EDIT, dm)
    assert len(edits) == len(notice.edits) and all(e.path.endswith(f"/{notice.id}") for e in edits)
    assert all(b.at - a.at >= 0.9 for a, b in zip(edits, edits[1:]))  # one edit a second per message
    [_, reply_call] = in_channel(fake, SEND, dm)
    *progress, final = edits
    assert all(e.at < reply_call.at for e in progress)  # no "still working" after the final reply...
    assert final.at > reply_call.at  # ...only its one-line outcome, which waits for the reply to go first


# ---- 5. /stop and /new: interactions and text -----------------------------------------------------


def assert_answered_once_through_the_interaction(fake: FakeDiscord, interaction_id: str, channel: str) -> FakeMessage:
    record = fake.interactions[interaction_id]
    assert record["responses"] == [5]  # deferred ("thinking…") first
    [callback] = for_token(fake, CALLBACK, interaction_id)
    [answer] = for_token(fake, ANSWER, interaction_id)
    assert for_token(fake, FOLLOW_UP, interaction_id) == []
    assert callback.at < answer.at and answer.status == 200
    [message] = [m for m in fake.bot_messages(channel) if m.interaction_id == interaction_id]
    assert message.id == record["original"] and not message.flags & FLAG_LOADING
    return message


async def test_slash_stop_and_new_are_deferred_then_answered_once(fake, start):
    gateway = await start(script=echo_script())
    dm = fake.dm_channel(USER)
    fake.push_dm(USER, "hello")
    await fake.wait_for(lambda: fake.bot_messages(dm))
    session = next(iter(gateway.sessions))
    generation = session.generation

    stop = fake.push_interaction("stop", USER)
    await fake.wait_for(lambda: for_token(fake, ANSWER, stop))
    new = fake.push_interaction("new", USER)
    await fake.wait_for(lambda: for_token(fake, ANSWER, new))
    await start.quiet()

    assert assert_answered_once_through_the_interaction(fake, stop, dm).content == "Nothing was running."
    assert assert_answered_once_through_the_interaction(fake, new, dm).content.startswith("Started a new session")
    assert session.generation == generation + 1
    assert len(in_channel(fake, SEND, dm)) == 1  # only the echo: commands never fell back to the channel
    assert len(fake.bot_messages(dm)) == 3


async def test_slash_new_with_arguments_answers_through_the_interaction_then_the_text_in_the_channel(fake, start):
    gateway = await start(script=echo_script())
    dm = fake.dm_channel(USER)
    new = fake.push_interaction("new", USER, args="plan the trip")
    await fake.wait_for(lambda: len(fake.bot_messages(dm)) == 2)
    await start.quiet()
    assert assert_answered_once_through_the_interaction(fake, new, dm).content.startswith("Started a new session")
    assert contents(fake.bot_messages(dm))[1] == "echo: plan the trip" and len(in_channel(fake, SEND, dm)) == 1
    assert next(iter(gateway.sessions)).generation == 2


async def test_text_stop_and_new_in_a_dm_and_unmentioned_in_a_channel_the_bot_posted_in(fake, start):
    gateway = await start(script=echo_script())
    dm = fake.dm_channel(USER)
    fake.push_dm(USER, "!stop")
    await fake.wait_for(lambda: fake.bot_messages(dm))
    assert contents(fake.bot_messages(dm)) == ["Nothing was running."]

    fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True)
    await fake.wait_for(lambda: fake.bot_messages(CHANNEL))
    channel_session = next(s for s in gateway.sessions if s.chat_id == str(CHANNEL))
    generation = channel_session.generation
    fake.push_guild_message(GUILD, CHANNEL, USER, "!new")  # no mention needed for text commands here
    await fake.wait_for(lambda: len(fake.bot_messages(CHANNEL)) == 2)
    await start.quiet()
    assert contents(fake.bot_messages(CHANNEL))[0] == "echo: hi"
    assert contents(fake.bot_messages(CHANNEL))[1].startswith("Started a new session")
    assert channel_session.generation == generation + 1
    assert len(fake.bot_messages(dm)) == 1

    fake.push_guild_message(GUILD, CHANNEL, USER, "!Reset")  # an alias of /new is a text command too
    await fake.wait_for(lambda: len(fake.bot_messages(CHANNEL)) == 3)
    await start.quiet()
    assert contents(fake.bot_messages(CHANNEL))[2].startswith("Started a new session")
    assert channel_session.generation == generation + 2


@pytest.mark.parametrize("how", ["interaction", "text"])
async def test_stop_during_an_inline_delegation_with_hanging_children_confirms_once(fake, start, how):
    model = ScriptedModel({"parent": delegating_parent, "leaf": hanging_child})
    gateway = await start(model=model, display={"interim_assistant_messages": False})
    dm = fake.dm_channel(USER)
    fake.push_dm(USER, "please delegate this")
    await children_hanging(model)
    [session] = list(gateway.sessions)
    assert session.mode == "inline" and session.running is not None

    if how == "interaction":
        stop = fake.push_interaction("stop", USER)
    else:
        fake.push_dm(USER, "!stop")
    await fake.wait_for(lambda: fake.bot_messages(dm))
    await start.quiet()

    [confirmation] = fake.bot_messages(dm)  # one confirmation, nothing more from the stopped work
    assert confirmation.content.startswith("Stopped the running turn and 2 subagents")
    if how == "interaction":
        assert assert_answered_once_through_the_interaction(fake, stop, dm) == confirmation
    assert session.running is None
    recent = gateway.host.children.recent(session.session_id)
    assert [c.state.value for c in recent] == ["INTERRUPTED", "INTERRUPTED"]


# ---- 6. splitting at 2,000 characters ---------------------------------------------------------------


def long_reply() -> str:
    sentence = "the quick brown fox jumps over the lazy dog again and again."
    prose = "\n\n".join(f"Paragraph {i}: {sentence}" for i in range(10))
    code = "\n".join(f"    result_{i:03d} = compute(step={i}, label='row {i:03d}')  # keep" for i in range(46))
    tail = "\n\n".join(f"Closing note {i}: every line here is short enough to stay whole." for i in range(16))
    text = f"{prose}\n\n```python\n{code}\n```\n\n{tail}"
    assert 4400 <= len(text) <= 4600, len(text)
    return text


async def test_a_long_reply_is_split_under_2000_with_balanced_fences_and_nothing_lost(fake, start):
    text = long_reply()
    await start(script={"parent": [[{"text": text}]]})
    fake.push_dm(USER, "write a lot")
    dm = fake.dm_channel(USER)
    await fake.wait_for(lambda: len(fake.bot_messages(dm)) >= 3)
    await start.quiet()
    parts = contents(fake.bot_messages(dm))
    assert len(parts) == 3
    assert all(len(p) <= 2000 for p in parts)
    assert all(len(fence_lines(p)) % 2 == 0 for p in parts)  # every part renders on its own
    assert any(p.startswith("```python\n") for p in parts[1:])  # a cut inside the code reopened it
    assert [c.status for c in in_channel(fake, SEND, dm)] == [200, 200, 200]

    def lines(t: str) -> list[str]:
        return [line.strip() for line in t.splitlines() if line.strip() and not fence_lines(line)]

    assert [line for p in parts for line in lines(p)] == lines(text)
    assert "".join(parts).count("result_0") == text.count("result_0")


# ---- 7. 429 on message create ------------------------------------------------------------------------


async def test_a_429_on_create_is_retried_once_without_a_duplicate(fake, start):
    gateway = await start(script={"parent": [[{"text": "after the rate limit"}]]})
    fake.fail_next(SEND, 429, retry_after=0.05)
    fake.push_dm(USER, "hello")
    dm = fake.dm_channel(USER)
    await fake.wait_for(lambda: fake.bot_messages(dm))
    await start.quiet()
    assert contents(fake.bot_messages(dm)) == ["after the rate limit"]
    limited, retried = in_channel(fake, SEND, dm)
    assert (limited.status, retried.status) == (429, 200)
    assert limited.body["nonce"] == retried.body["nonce"] and retried.body["enforce_nonce"] is True
    [session] = list(gateway.sessions)
    assert session.running is None


async def test_a_reply_discord_refuses_is_one_warning_not_two(fake, start, caplog):
    # The adapter warned of the refusal, and the outbox of the part it failed.
    caplog.set_level(logging.INFO)
    await start(script={"parent": [[{"text": "a reply"}]]})
    fake.fail_next(SEND, 403, code=50001, message="Missing Access")
    fake.push_dm(USER, "hello")
    dm = fake.dm_channel(USER)
    await fake.wait_for(lambda: in_channel(fake, SEND, dm))
    await start.quiet()
    assert fake.bot_messages(dm) == []
    [warning] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert dm in warning and "403 (code 50001): Missing Access" in warning, warning  # the channel, and Discord's words


async def test_a_command_answer_told_to_wait_an_hour_is_retried_by_the_outbox_not_slept_on(fake, start):
    await start(script=echo_script(), delivery={"max_retry_after": 0.2})
    fake.fail_next(ANSWER, 429, retry_after=3600)
    dm = fake.dm_channel(USER)
    stop = fake.push_interaction("stop", USER)
    await fake.wait_for(lambda: [c.status for c in for_token(fake, ANSWER, stop)] == [429, 200])
    fake.push_dm(USER, "hello")  # the chat is served again
    await fake.wait_for(lambda: "echo: hello" in contents(fake.bot_messages(dm)))
    await start.quiet()
    [message] = [m for m in fake.bot_messages(dm) if m.interaction_id == stop]
    assert message.content == "Nothing was running." and not message.flags & FLAG_LOADING
    assert for_token(fake, FOLLOW_UP, stop) == [] and len(in_channel(fake, SEND, dm)) == 1


# ---- 8. RESUME replay ----------------------------------------------------------------------------------


async def test_a_message_replayed_after_resume_runs_one_turn(fake, start, caplog):
    caplog.set_level(logging.DEBUG, logger="gateway.app")
    model = ScriptedModel(echo_script())
    await start(model=model)
    dm = fake.dm_channel(USER)
    message_id = fake.push_dm(USER, "only once, please")
    await fake.wait_for(lambda: fake.bot_messages(dm))
    fake.replay_on_resume([message_id])
    fake.request_reconnect()
    await fake.wait_for(lambda: [op for op, _ in fake.gateway_ops if op in (2, 6)] == [2, 6])
    dropped = f"dropping duplicate discord event {message_id}"
    await fake.wait_for(lambda: any(dropped in r.getMessage() for r in caplog.records))
    await start.quiet()
    assert contents(fake.bot_messages(dm)) == ["echo: only once, please"]
    assert len(model.requests) == 1


# ---- 9. reconnect ----------------------------------------------------------------------------------


async def test_after_an_op7_reconnect_one_message_gets_one_reply_on_one_connection(fake, start):
    model = ScriptedModel(echo_script())
    await start(model=model)
    fake.request_reconnect()
    await fake.wait_for(lambda: fake.connections_opened == 2 and fake.live_connections == 1)
    await fake.wait_for(lambda: [op for op, _ in fake.gateway_ops if op in (2, 6)] == [2, 6])
    fake.push_dm(USER, "still there?")
    dm = fake.dm_channel(USER)
    await fake.wait_for(lambda: fake.bot_messages(dm))
    await start.quiet()
    assert contents(fake.bot_messages(dm)) == ["echo: still there?"]
    assert len(model.requests) == 1
    assert fake.live_connections == 1 and fake.connections_opened == 2


async def test_a_second_gateway_on_the_same_token_is_named_in_the_log_by_both(fake, start, tmp_path, caplog):
    # Discord sends every connected session each message: both gateways answer it. The state lock
    # cannot see this (two state directories); each gateway can see the other's reply arrive.
    await start(model=ScriptedModel(echo_script("first")))
    await start(model=ScriptedModel(echo_script("second")), home=tmp_path / "other")
    await fake.wait_for(lambda: fake.live_connections == 2)
    dm = fake.dm_channel(USER)
    fake.push_dm(USER, "hello")
    await fake.wait_for(lambda: len(fake.bot_messages(dm)) == 2)
    await start.quiet()
    assert sorted(contents(fake.bot_messages(dm))) == ["first: hello", "second: hello"]  # what the user sees
    warned = [r for r in caplog.records if r.levelno == logging.ERROR and "same bot token" in r.getMessage()]
    assert len(warned) == 2, [r.getMessage() for r in warned]
    assert all(fake.token not in r.getMessage() for r in warned)
    fake.push_dm(USER, "again")
    await fake.wait_for(lambda: len(fake.bot_messages(dm)) == 4)
    await start.quiet()
    assert len([r for r in caplog.records if "same bot token" in r.getMessage()]) == 2  # once per process


# ---- 10. access control ------------------------------------------------------------------------------


async def test_a_stranger_gets_one_refusal_and_the_model_is_never_called(fake, start):
    model = ScriptedModel(echo_script())
    await start(model=model, discord={"allowed_users": [str(USER)]})
    stranger_dm = fake.dm_channel(STRANGER)
    fake.push_dm(STRANGER, "let me in")
    await fake.wait_for(lambda: fake.bot_messages(stranger_dm))
    await start.quiet()
    [refusal] = fake.bot_messages(stranger_dm)
    assert "only answers people" in refusal.content and str(STRANGER) in refusal.content
    assert model.requests == []

    fake.push_dm(USER, "hello")  # an allowed user still gets served
    await fake.wait_for(lambda: fake.bot_messages(fake.dm_channel(USER)))
    assert contents(fake.bot_messages(fake.dm_channel(USER))) == ["echo: hello"]
    assert len(model.requests) == 1 and len(fake.bot_messages(stranger_dm)) == 1


async def test_a_name_anyone_can_give_themselves_is_not_an_allowed_user(fake, start):
    # A display name and a server nickname are free text, and a username may be all digits: a
    # stranger can copy an allowed user's id or username into them. Only ids, and usernames, count.
    model = ScriptedModel(echo_script())
    await start(model=model, discord={"allowed_users": [str(USER), "ada"]})
    fake.push_guild_message(GUILD, CHANNEL, STRANGER, "as nick", mention_bot=True, name="mallory", nick=str(USER))
    # Another stranger: one refused in a channel is refused there once in a while, not at each message.
    fake.push_guild_message(GUILD, CHANNEL, STRANGER + 2, "as nick", mention_bot=True, name="eve", nick="ada")
    fake.push_dm(STRANGER, "as display name", name="mallory", global_name="ada")
    fake.push_dm(STRANGER + 1, "as username", name=str(USER))
    strangers = [CHANNEL, fake.dm_channel(STRANGER), fake.dm_channel(STRANGER + 1)]
    await fake.wait_for(lambda: sum(len(fake.bot_messages(c)) for c in strangers) == 4)
    fake.push_dm(USER + 1, "by username", name="ada", global_name="Ada L.")  # the real ada
    await fake.wait_for(lambda: fake.bot_messages(fake.dm_channel(USER + 1)))
    await start.quiet()
    assert all("only answers people" in r.content for c in strangers for r in fake.bot_messages(c))
    assert contents(fake.bot_messages(fake.dm_channel(USER + 1))) == ["echo: by username"]
    assert len(model.requests) == 1
