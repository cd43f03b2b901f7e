"""A reply across forum topics (``external_reply``) while the bot's question (``clarify``) waits in a topic: the
real aiogram client inside `TelegramAdapter` against the loopback `FakeTelegram`, with the real `Gateway` behind it.

In a group a reply to another message than the question (an earlier answer of the bot's) is a request of its own,
not the answer (`gateway.questions`). A reply to the bot's answer in another topic is as much a reply to another
message: the Bot API gives it as ``external_reply``, with no ``reply_to_message`` that `Inbound.reply_to` read,
and a message replying to nothing answers the question."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.app import Gateway
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.asking_model import asking_parent
from tests.clock_steps import run_clock_until
from tests.platforms.sink import Sink
from tests.scenarios.test_group_question_replies import BOB, BOT, CAROL, GROUP, QUESTION
from tests.scenarios.test_telegram_comment_threads import GROUP as DISCUSSION
from tests.scenarios.test_telegram_comment_threads import comment, post

EARLIER, ASKED = 7, 9
"""The topic Carol had her answer in, and the one Bob asks the bot to deploy in."""


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


@pytest.fixture
async def group(fake, tmp_path) -> AsyncIterator[tuple[Gateway, FakeClock]]:
    clock = FakeClock(autojump=False, start=time.time())
    display = {"progress": "off", "long_running_notifications": False}
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}}, display=display)
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
    gateway = await start_gateway(config, [adapter], model=ScriptedModel({"parent": asking_parent}), clock=clock)
    try:
        yield gateway, clock
    finally:
        await gateway.stop(grace=0)


def push(fake: FakeTelegram, clock: FakeClock, text: str, topic: int, *, reply_to: int | None = None, **user) -> int:
    update = fake.message_update(GROUP, text, thread_id=topic, reply_to=reply_to, **user)
    update["message"]["date"] = int(clock.time())
    fake.push_update(update)
    return update["message"]["message_id"]


def texts(fake: FakeTelegram) -> list[str]:
    return [m["text"] for m in fake.messages[str(GROUP)]]


async def test_a_reply_to_an_answer_in_another_topic_is_no_answer_to_the_question_waiting_here(fake, group):
    gateway, clock = group
    push(fake, clock, f"@{BOT} when is the release?", EARLIER, **CAROL)
    await run_clock_until(fake, clock, lambda: texts(fake))
    earlier = fake.messages[str(GROUP)][0]["message_id"]
    push(fake, clock, f"@{BOT} please deploy the app", ASKED, **BOB)
    await run_clock_until(fake, clock, lambda: len(texts(fake)) == 2)
    assert texts(fake)[1].startswith(QUESTION)
    question = fake.messages[str(GROUP)][1]["message_id"]
    across = push(fake, clock, "and the one after?", ASKED, reply_to=earlier, **CAROL)
    assert "external_reply" in fake.said[str(GROUP)][across]  # a reply across topics, as Telegram shows it
    await run_clock_until(fake, clock, lambda: any(s.queue for s in gateway.sessions) or len(texts(fake)) == 3)
    push(fake, clock, "2", ASKED, reply_to=question, **BOB)
    await run_clock_until(fake, clock, lambda: len(texts(fake)) == 4)
    assert texts(fake)[2:] == ["deploying to: [@bob] production", "plain answer to [@carol] and the one after?"]


async def test_a_reply_across_topics_as_the_bot_api_sends_it_names_the_message_it_replies_to(fake):
    # The Bot API gives a message of a topic other than General its topic's head as ``reply_to_message`` (the
    # implicit reply, ``get_implicit_reply_to_message_id`` in tdlib/telegram-bot-api's Client.cpp), a reply across
    # topics too: that is no reply to the topic's creation; ``external_reply`` says what it replies to.
    adapter, sink = TelegramAdapter(fake.token, api_base=fake.base_url), Sink()
    await adapter.start(sink, [])
    try:
        fake.messages[str(GROUP)].append({"message_id": 50, "date": 1, "text": "it is 2 GB", "entities": [],
                                          "thread_id": EARLIER})
        fake.message_update(GROUP, "a topic's message: the group is a forum", **BOB, thread_id=EARLIER)
        update = fake.message_update(GROUP, "and the docs?", **CAROL, thread_id=ASKED, reply_to=50)
        message = update["message"]
        message["reply_to_message"] = {
            "message_id": ASKED, "date": 1, "chat": message["chat"], "from": message["from"],
            "message_thread_id": ASKED, "is_topic_message": True,
            "forum_topic_created": {"name": "Docs", "icon_color": 7322096}}
        fake.push_update(update)
        await fake.wait_for(lambda: sink.inbound)
        assert [(i.text, i.thread_id, i.reply_to) for i in sink.inbound] == [("and the docs?", str(ASKED), "50")]
    finally:
        await adapter.stop()


async def test_the_fake_gives_no_chat_for_a_reply_across_a_private_chats_topics():
    # ExternalReplyInfo's ``chat`` and ``message_id``: "Available only if the chat is a supergroup or a channel".
    async with FakeTelegram(username=BOT, topics_in_private=True) as fake:
        fake.messages["42"].append({"message_id": 50, "date": 1, "text": "it is 2 GB", "entities": [], "thread_id": 3})
        message = fake.message_update(42, "and the docs?", thread_id=4, reply_to=50)["message"]
    assert message["external_reply"] == {"origin": {"type": "user", "date": 1, "sender_user": fake.bot_user}}


def _comment_gateway(tmp_path, fake: FakeTelegram, model: ScriptedModel):
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}}, display={"progress": "off"},
                         agent={"toolsets": ["file"]})
    (tmp_path / "state" / "workspace").mkdir(parents=True, exist_ok=True)
    return start_gateway(config, [TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)],
                         model=model)


async def test_a_file_answering_a_comment_deleted_meanwhile_lands_under_the_post(fake, tmp_path):
    model = ScriptedModel({"parent": [[
        {"wait": "asked", "tool_calls": [{"name": "send_file", "arguments": {"path": "q3.csv"}}]},
        {"text": "there you go"},
    ]]})
    gateway = await _comment_gateway(tmp_path, fake, model)
    try:
        (tmp_path / "state" / "workspace" / "q3.csv").write_text("region,total\nnorth,12\n")
        await fake.wait_for(lambda: fake.calls_to("getUpdates"))
        posted = post(fake)
        asked = comment(fake, f"@{BOT} the Q3 numbers?", on=posted)
        await model.reached("asked")
        fake.delete_user_message(DISCUSSION, asked)
        model.release("asked")
        await fake.wait_for(lambda: len(fake.messages[str(DISCUSSION)]) == 2, timeout=10)
        await settled(gateway)
        sent = fake.messages[str(DISCUSSION)]
        assert sent[0]["document"]["file_name"] == "q3.csv"
        assert [(m["thread_id"], m["reply_to"]) for m in sent] == [(posted, posted)] * 2
        assert len(fake.calls_to("sendDocument")) == 2  # refused quoting the comment, then sent under the post
    finally:
        await gateway.stop(grace=0)


async def test_the_answer_to_a_comment_whose_post_is_gone_too_still_arrives_once(fake, tmp_path):
    model = ScriptedModel({"parent": [[{"wait": "asked", "text": "the answer"}]]})
    gateway = await _comment_gateway(tmp_path, fake, model)
    try:
        await fake.wait_for(lambda: fake.calls_to("getUpdates"))
        posted = post(fake)
        asked = comment(fake, f"@{BOT} what changed?", on=posted)
        await model.reached("asked")
        fake.delete_user_message(DISCUSSION, asked)
        fake.delete_user_message(DISCUSSION, posted)
        model.release("asked")
        await fake.wait_for(lambda: fake.messages[str(DISCUSSION)], timeout=10)
        await settled(gateway)
        assert [(m["text"], m["reply_to"]) for m in fake.messages[str(DISCUSSION)]] == [("the answer", None)]
        assert len(fake.calls_to("sendMessage")) == 2
    finally:
        await gateway.stop(grace=0)
