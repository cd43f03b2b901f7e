"""End to end on Telegram: a group upgraded to a supergroup while the bot talks in it.

The upgrade gives the chat a new id; Telegram refuses every write to the old one with
``migrate_to_chat_id``. The real aiogram client in `TelegramAdapter` talks to `FakeTelegram`,
which refuses them exactly so, with the real `Gateway` behind it. Groups are paced at one
call per 3 s, so these chats take a few seconds each.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from platforms.fakes._waiting import wait_until
from platforms.fakes.telegram import FakeTelegram
from tests.scenarios.telegram_webhook_gateway import webhook_gateway
from tests.scenarios.test_telegram_chat import BOT, EVERYONE, Gateways, texts

GROUP = -4001
PACED = 15.0
"""Seconds to wait for what the 3 s pacing of group chats holds back."""


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


@pytest.fixture
async def gateways(fake: FakeTelegram, tmp_path) -> AsyncIterator[Gateways]:
    started = Gateways(fake, tmp_path)
    yield started
    for gateway in list(started.running):
        await started.stop(gateway)


def mention(fake, chat: int, text: str, chat_type: str = "group") -> int:
    return fake.push_message(chat, f"@{BOT} {text}", chat_type=chat_type, user_id=5, username="bob")


def sent_to(fake, chat: int) -> list[str]:
    return [params["text"] for params in fake.calls_to("sendMessage") if int(params["chat_id"]) == chat]


async def test_the_answer_written_during_the_upgrade_arrives_in_the_supergroup_and_the_card_is_finished_there(
        fake, gateways):
    config = gateways.config(platforms=EVERYONE, display={"progress_delay": 0.1})
    model = ScriptedModel({"parent": [[{"wait": "upgraded", "text": "the answer"}]]})
    await gateways.start(config, model=model)
    mention(fake, GROUP, "work on it")
    await fake.wait_for(lambda: fake.messages[str(GROUP)])  # the progress card
    supergroup = fake.upgrade_group(GROUP)
    model.release("upgraded")
    await fake.wait_for(lambda: any(t.startswith("✓ Done") for t in texts(fake, supergroup)), PACED)
    await gateways.quiet()
    [card] = fake.messages[str(GROUP)]
    assert card["text"].startswith("⏳")  # a message in the old chat cannot change any more
    assert texts(fake, supergroup).count("the answer") == 1
    assert not any(t.startswith("⏳") for t in texts(fake, supergroup))
    assert sent_to(fake, GROUP)[1:] == ["the answer"]  # refused once; nothing else tried the old id again


def remembers_the_word(request) -> dict:
    """Answers whether an earlier message of the conversation named the word."""
    said = [str(m["content"]) for m in request.messages if m["role"] == "user"]
    return {"text": "remembered: teal" if any("teal" in s for s in said[:-1]) else "noted"}


async def test_the_conversation_goes_on_in_the_supergroup_with_its_history_also_after_a_restart(fake, gateways):
    config = gateways.config(platforms=EVERYONE)
    model = ScriptedModel({"parent": remembers_the_word})
    gateway = await gateways.start(config, model=model)
    mention(fake, GROUP, "the word is teal")
    await fake.wait_for(lambda: texts(fake, GROUP) == ["noted"])
    supergroup = fake.upgrade_group(GROUP)
    fake.push_upgrade_updates(GROUP)
    mention(fake, supergroup, "what was the word?", chat_type="supergroup")
    await fake.wait_for(lambda: texts(fake, supergroup), PACED)
    assert texts(fake, supergroup) == ["remembered: teal"]
    await gateways.quiet()
    await gateways.stop(gateway)

    await gateways.start(config, model=model)
    mention(fake, supergroup, "and the word now?", chat_type="supergroup")
    await fake.wait_for(lambda: len(texts(fake, supergroup)) == 2, PACED)
    await gateways.quiet()
    assert texts(fake, supergroup) == ["remembered: teal", "remembered: teal"]
    assert sent_to(fake, GROUP) == ["noted"]  # every later answer went straight to the supergroup


async def test_in_webhook_mode_a_supergroup_message_delivered_before_the_upgrade_goes_on_with_the_group(
        fake, gateways):
    # A webhook gets updates over several connections at once: the supergroup's first message may
    # come before the service messages of the upgrade (polling serves them in order).
    async with webhook_gateway(gateways, ScriptedModel({"parent": remembers_the_word})) as (gateway, adapter):
        told = fake.message_update(GROUP, f"@{BOT} the word is teal", chat_type="group", user_id=5, username="bob")
        assert await fake.deliver_webhook(told) == 200
        await fake.wait_for(lambda: texts(fake, GROUP) == ["noted"])

        supergroup = fake.upgrade_group(GROUP)
        in_group, in_supergroup = fake.upgrade_updates(GROUP)  # the supergroup's message 1, written first
        asked = fake.message_update(supergroup, f"@{BOT} what was the word?", chat_type="supergroup", user_id=5,
                                    username="bob")
        assert asked["message"]["message_id"] == 2
        delivering = asyncio.create_task(fake.deliver_webhook(asked))
        inbox = gateway.store.inbox
        event = f"{fake.bot_user['id']}:{asked['update_id']}"  # Telegram's event ids name the bot too
        await wait_until(lambda: adapter.upgrade_wait.held or inbox.received_at("telegram", event) is not None, 5.0)
        assert await fake.deliver_webhook(in_supergroup) == 200
        assert await fake.deliver_webhook(in_group) == 200
        assert await delivering == 200

        await fake.wait_for(lambda: texts(fake, supergroup), PACED)
        await gateways.quiet()
        assert texts(fake, supergroup) == ["remembered: teal"]
        # Written in the supergroup, handed over under the group's id: still quoted there.
        assert [m["reply_to"] for m in fake.messages[str(supergroup)]] == [asked["message"]["message_id"]]
        assert gateway.sessions.find("telegram", str(supergroup), None) is None  # no conversation of its own


async def test_an_answer_to_a_message_written_before_the_upgrade_quotes_no_message_of_the_supergroup(fake, gateways):
    # Message ids are numbered per chat, a supergroup's from 1: Bob's number in the group is Carol's
    # in the supergroup. Quoting it there would show Bob's answer as the answer to Carol's question.
    model = ScriptedModel({"parent": [[{"wait": "upgraded", "text": "answer for bob"}], [{"text": "answer for carol"}]]})
    await gateways.start(gateways.config(platforms=EVERYONE), model=model)
    fake.push_message(GROUP, "morning all", chat_type="group", user_id=7, username="dave")  # not for the bot
    bobs = fake.message_update(GROUP, f"@{BOT} work on it", chat_type="group", user_id=5, username="bob")
    fake.push_update(bobs)
    await model.reached("upgraded")
    supergroup = fake.upgrade_group(GROUP)
    fake.push_upgrade_updates(GROUP)
    carols = fake.message_update(supergroup, f"@{BOT} who is on call?", chat_type="supergroup", user_id=6,
                                 username="carol")
    fake.push_update(carols)
    number = carols["message"]["message_id"]
    assert number == bobs["message"]["message_id"]
    await fake.wait_for(lambda: number in fake.said[str(supergroup)])  # served: a reply could find it
    model.release("upgraded")
    await fake.wait_for(lambda: "answer for carol" in texts(fake, supergroup), PACED)
    await gateways.quiet()
    answers = [(m["text"], m["reply_to"]) for m in fake.messages[str(supergroup)] if m["text"].startswith("answer")]
    # Bob's stayed in the group: his answer quotes nothing; Carol's, written in the supergroup, is quoted there.
    assert answers == [("answer for bob", None), ("answer for carol", number)]
