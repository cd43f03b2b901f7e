"""`/agents`, `/new` and `/delegation` at a chat's top level while its conversations run in threads or topics,
through the real SDKs against the loopback fakes with the real Gateway. Slack takes slash commands only at a
channel's top level while every turn there runs in a thread, a session of its own that no command at the top level
reaches: each answer says so, and how to reach a thread, rather than "No subagents in this chat." while a thread's
run, or "Started a new session." while every thread's conversation goes on. Elsewhere (a DM, a chat without
threads) the answers are as they were."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.testing import make_config, start_gateway
from platforms.fakes.slack import FakeSlack
from platforms.fakes.telegram import FakeTelegram
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter
from tests.clock_steps import run_clock_until
from tests.hanging_children import children_hanging, delegating_parent, hanging_child

CHANNEL = "C1"
BOT = "sb_top_level_commands_bot"
FORUM = -1002
BOB = dict(chat_type="supergroup", user_id=5, username="bob")
NEW_APART = ("The threads of this chat are sessions of their own, which a /new here does not reach: send !new in a "
             "thread to start it afresh.")
DELEGATION_APART = ("The threads of this chat are sessions of their own, which do not follow /delegation here: send "
                    "!delegation in a thread to see or switch its backend.")


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    fake = await FakeSlack().start()
    yield fake
    await fake.close()


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


async def command(fake: FakeSlack, clock: FakeClock, name: str, channel: str = CHANNEL, text: str = "") -> str:
    """The ephemeral answer to a slash command typed in ``channel``, paced a second after the answer before."""
    before = len(fake.ephemeral)
    await fake.push_slash_command(name, "U2", channel, text)
    await run_clock_until(fake, clock, lambda: len(fake.ephemeral) > before)
    [answer] = fake.ephemeral[before:]
    return answer["text"]


def bot_texts(fake: FakeSlack, thread: str) -> list[str]:
    return [m.get("text", "") for m in fake.messages.get((CHANNEL, thread), []) if m.get("bot_id")]


async def test_slack_commands_in_the_channel_say_that_its_threads_go_on_and_how_to_reach_them(slack, tmp_path):
    model = ScriptedModel({"parent": delegating_parent, "leaf": hanging_child})
    adapter = SlackAdapter(bot_token=slack.bot_token, app_token=slack.app_token, api_base=slack.api_base,
                           ping_interval=0.2)
    clock = FakeClock(autojump=False)  # the answers to one channel are paced a second apart, as its messages are
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}}, display={"progress": "off"})
    gateway = await start_gateway(config, [adapter], model=model, clock=clock)
    try:
        thread = (await slack.push_mention(CHANNEL, "U1", "please delegate this"))["event"]["ts"]
        await children_hanging(model)
        await run_clock_until(slack, clock, lambda: "I started the subagents." in bot_texts(slack, thread))

        assert await command(slack, clock, "/agents") == (
            "No subagents here. 2 subagents work in 1 thread of this chat, which /agents here does not reach: "
            "send !agents in that thread to list them.")
        assert await command(slack, clock, "/agents", text="stop first") == (
            "No subagents here. 2 subagents work in 1 thread of this chat, which /agents here does not reach: "
            "send !agents in that thread to list them.")
        started = await command(slack, clock, "/new")
        assert started == f"Started a new session. Delegation here is background. {NEW_APART}"
        session = gateway.sessions.find("slack", CHANNEL, thread)
        assert session is not None and len(gateway.host.children.children(session.session_id)) == 2  # untouched
        shown = await command(slack, clock, "/delegation")
        assert shown.splitlines()[-2] == DELEGATION_APART
        assert await command(slack, clock, "/delegation", text="default") == (
            f"Delegation here uses default, and later sessions will too. {DELEGATION_APART}")

        await slack.push_message(CHANNEL, "U1", "!agents", thread_ts=thread)  # as the answer says: both listed
        await run_clock_until(slack, clock, lambda: any("first [hang]" in t for t in bot_texts(slack, thread)))
        [listing] = [t for t in bot_texts(slack, thread) if "first [hang]" in t]
        assert "second [hang]" in listing and "does not reach" not in listing

        # A DM has no threads: its answers are as they were.
        dm = slack.dm_channel("U2")
        assert await command(slack, clock, "/agents", dm) == "No subagents in this chat."
        assert await command(slack, clock, "/new", dm) == "Started a new session. Delegation here is background."
    finally:
        await gateway.stop(grace=0)


async def test_telegram_commands_in_the_general_topic_count_the_topics_subagents(telegram, tmp_path):
    model = ScriptedModel({"parent": delegating_parent, "leaf": hanging_child})
    clock = FakeClock(autojump=False)  # a group's messages are paced three seconds apart
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}}, display={"progress": "off"})
    adapter = TelegramAdapter(telegram.token, api_base=telegram.base_url, polling_timeout=10)
    gateway = await start_gateway(config, [adapter], model=model, clock=clock)
    try:
        telegram.push_message(FORUM, f"@{BOT} please delegate this", thread_id=77, **BOB)
        await children_hanging(model)
        general = lambda: [m["text"] for m in telegram.messages[str(FORUM)] if m.get("thread_id") is None]  # noqa: E731

        telegram.push_message(FORUM, f"/agents@{BOT}", **BOB)  # the General topic: no thread
        await run_clock_until(telegram, clock, general)
        assert general() == [
            "No subagents here. 2 subagents work in 1 topic of this chat, which /agents here does not reach: "
            "send /agents in that topic to list them."]
        telegram.push_message(FORUM, f"/new@{BOT}", **BOB)
        await run_clock_until(telegram, clock, lambda: len(general()) == 2)
        assert general()[1] == (
            "Started a new session. Delegation here is background. The topics of this chat are sessions of their "
            "own, which a /new here does not reach: send /new in a topic to start it afresh.")
        [topic] = [s for s in gateway.sessions if s.thread_id is not None]
        assert len(gateway.host.children.children(topic.session_id)) == 2  # untouched, as it said
    finally:
        await gateway.stop(grace=0)
