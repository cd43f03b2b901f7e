"""A `/stop` at a chat's top level while work goes on only in its threads or topics, through the real SDKs
against the loopback fakes with the real Gateway. Each thread (Slack, Discord) or forum topic (Telegram) is a
session of its own, and on Slack every turn of a channel runs in a thread while a slash command can only be
typed at the channel's top level (Slack takes none in a thread): such a stop reaches none of them. Its answer
says where the work goes on and how to stop it, rather than "Nothing was running." alone while a colleague's
turn visibly goes on."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from platforms.fakes.telegram import FakeTelegram
from platforms.slack import SlackAdapter

CHANNEL = "C1"
BOT = "sb_top_level_test_bot"
FORUM = -1001
BOB = dict(chat_type="supergroup", user_id=5, username="bob")
CAROL = dict(chat_type="supergroup", user_id=6, username="carol")


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    fake = await FakeSlack().start()
    yield fake
    await fake.close()


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


def bot_texts(fake: FakeSlack, thread: str | None) -> list[str]:
    return [m.get("text", "") for m in fake.messages.get((CHANNEL, thread), []) if m.get("bot_id")]


async def test_a_slack_stop_in_the_channel_says_that_a_threads_turn_goes_on_and_how_to_stop_it(slack, tmp_path):
    model = ScriptedModel({"parent": [[{"wait": "bob", "text": "answer for bob"}]]})
    adapter = SlackAdapter(bot_token=slack.bot_token, app_token=slack.app_token, api_base=slack.api_base,
                           ping_interval=0.2)
    gateway = await start_gateway(make_config(tmp_path, platforms={"slack": {"allow_all": True}}), [adapter],
                                  model=model)
    try:
        bobs = await slack.push_mention(CHANNEL, "U1", "how big is the release?")
        await model.reached("bob")
        await slack.push_slash_command("/stop", "U2", CHANNEL)
        await slack.wait_for(lambda: slack.ephemeral)
        assert [m["text"] for m in slack.ephemeral] == [
            "Nothing was running. Work goes on in 1 thread of this chat, which a stop here does not reach: "
            "send !stop in that thread to stop it."]
        model.release("bob")
        thread = bobs["event"]["ts"]
        await slack.wait_for(lambda: "answer for bob" in bot_texts(slack, thread))  # not stopped, as it said
        await settled(gateway)
        await slack.push_slash_command("/stop", "U2", CHANNEL)
        await slack.wait_for(lambda: len(slack.ephemeral) == 2)
        assert slack.ephemeral[1]["text"] == "Nothing was running."  # nothing at work anywhere
    finally:
        await gateway.stop(grace=0)


async def test_a_telegram_stop_in_the_general_topic_counts_the_topics_at_work(telegram, telegram_gateways):
    model = ScriptedModel({"parent": lambda request: {"wait": "topic", "text": "an answer"}})
    gateway = await telegram_gateways(telegram, model, progress="off")
    telegram.push_message(FORUM, f"@{BOT} a question in 77", thread_id=77, **BOB)
    telegram.push_message(FORUM, f"@{BOT} a question in 88", thread_id=88, **CAROL)
    await telegram.wait_for(lambda: sum(s.running is not None for s in gateway.sessions) == 2)
    telegram.push_message(FORUM, f"/stop@{BOT}", **CAROL)  # the General topic: no thread
    await telegram.wait_for(lambda: telegram.messages[str(FORUM)])
    assert [m["text"] for m in telegram.messages[str(FORUM)]] == [
        "Nothing was running. Work goes on in 2 topics of this chat, which a stop here does not reach: "
        "send /stop in a topic to stop its work."]
    assert all(session.running is not None and not session.running.suppressed
               for session in gateway.sessions if session.thread_id is not None)  # both go on
