"""The message a Telegram user replied to reaches the model before their own text (`Inbound.replied`): "@bot what
does this mean?" sent as a reply to a teammate's long message reached the model without that message, and it could
not answer. The part of it the user picked (``quote``) in its place; for a reply to the bot's own message only that
part, as the model has the rest in its history; nothing for the head of a forum topic, which every message of it
replies to unasked. The real aiogram client inside `TelegramAdapter` against `FakeTelegram` over loopback HTTP,
through a running gateway to a scripted model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent.models.scripted import ScriptedModel
from gateway import senders
from gateway.testing import make_config, settled, start_gateway
from platforms.base import Inbound
from platforms.fakes.telegram import FakeTelegram
from platforms.messages import REPLIED_CHARS, replying
from platforms.telegram import TelegramAdapter

BOT = "switchboard_bot"
GROUP, FORUM, OTHER_GROUP, PRIVATE = -1001, -1002, -1004, 42
BOB = dict(chat_type="supergroup", user_id=5, username="bob")
ALICE = dict(chat_type="supergroup", user_id=6, username="alice")
PRIVATE_BOB = dict(chat_type="private", user_id=PRIVATE, username="bob")


class Chat:
    def __init__(self, fake: FakeTelegram, model: ScriptedModel, gateway) -> None:
        self.fake, self.model, self.gateway = fake, model, gateway
        self.said: list[str] = []

    def write(self, chat: int, text: str, *, who: dict[str, Any] = BOB, **kw: Any) -> dict[str, Any]:
        update = self.fake.message_update(chat, text, **who, **kw)
        return update

    def push(self, update: dict[str, Any]) -> int:
        self.fake.push_update(update)
        return update["message"]["message_id"]

    async def read(self, n: int) -> list[str]:
        """What the model read, once it has read ``n`` messages and its ``n`` answers are sent."""
        await self.fake.wait_for(lambda: len(self.said) >= n and self.answers() >= n)
        return self.said

    def answers(self) -> int:
        return sum(m["text"] == "ok" for sent in self.fake.messages.values() for m in sent)


@pytest.fixture
async def chat(tmp_path) -> AsyncIterator[Chat]:
    said: list[str] = []

    def answer(request) -> dict:
        said.append(str(request.messages[-1]["content"]))
        return {"text": "ok"}

    model = ScriptedModel({"parent": answer})
    async with FakeTelegram(username=BOT) as fake:
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
        config = make_config(tmp_path, platforms={"telegram": {"enabled": False, "allow_all": True}})
        gateway = await start_gateway(config, [adapter], model=model)
        try:
            c = Chat(fake, model, gateway)
            c.said = said
            yield c
        finally:
            await gateway.stop(grace=0)


async def test_a_reply_to_a_teammates_message_reaches_the_model_with_it(chat: Chat) -> None:
    alices = chat.push(chat.write(GROUP, "The deploy failed:\nrollback needed", who=ALICE))  # not for the bot
    chat.push(chat.write(GROUP, f"@{BOT} what does this mean?", reply_to=alices))
    assert await chat.read(1) == [
        f"[@bob] > (replying to @alice) The deploy failed:\n> rollback needed\n\n@{BOT} what does this mean?"]


async def test_the_part_the_user_picked_is_read_in_place_of_the_whole(chat: Chat) -> None:
    alices = chat.push(chat.write(GROUP, "first point. second point.", who=ALICE))
    reply = chat.write(GROUP, f"@{BOT} why?", reply_to=alices)
    reply["message"]["quote"] = {"text": "second point.", "position": 13, "is_manual": True}
    chat.push(reply)
    assert await chat.read(1) == [f"[@bob] > (replying to @alice) second point.\n\n@{BOT} why?"]


async def test_a_long_message_is_cut_and_a_file_is_named(chat: Chat) -> None:
    long = chat.push(chat.write(GROUP, "word " * 400, who=ALICE))
    photo = chat.write(OTHER_GROUP, "", who=ALICE)
    del photo["message"]["text"]
    photo["message"]["photo"] = [{"file_id": "p1", "file_unique_id": "u1", "width": 9, "height": 9}]
    photo = chat.push(photo)
    chat.push(chat.write(GROUP, f"@{BOT} sum it up", reply_to=long))
    first, = await chat.read(1)
    chat.push(chat.write(OTHER_GROUP, f"@{BOT} what is it?", reply_to=photo))  # not paced behind the first answer
    _, second = await chat.read(2)
    head = first.split("\n\n")[0]
    assert head.startswith("[@bob] > (replying to @alice) word word") and head.endswith("word…")
    assert len(head) < REPLIED_CHARS + 40
    assert second == f"[@bob] > (replying to @alice) (a photo)\n\n@{BOT} what is it?"


async def test_a_reply_to_the_bots_message_brings_only_the_part_picked(chat: Chat) -> None:
    chat.push(chat.write(PRIVATE, "hello", who=PRIVATE_BOB))
    await chat.read(1)
    chat.push(chat.write(PRIVATE, "and then?", who=PRIVATE_BOB, reply_to_bot=True))
    await chat.read(2)
    picked = chat.write(PRIVATE, "meaning?", who=PRIVATE_BOB, reply_to_bot=True)
    picked["message"]["quote"] = {"text": "ok", "position": 0}
    chat.push(picked)
    assert (await chat.read(3))[1:] == ["and then?", "> (replying to you) ok\n\nmeaning?"]


async def test_the_head_of_a_topic_is_no_reply(chat: Chat) -> None:
    in_topic = chat.write(FORUM, f"@{BOT} in the topic", thread_id=77)
    in_topic["message"]["reply_to_message"] = {  # as Telegram sends every message of a topic
        "message_id": 77, "date": in_topic["message"]["date"], "chat": in_topic["message"]["chat"],
        "from": in_topic["message"]["from"], "message_thread_id": 77, "is_topic_message": True,
        "forum_topic_created": {"name": "Releases", "icon_color": 7322096}}
    chat.push(in_topic)
    assert await chat.read(1) == [f"[@bob] @{BOT} in the topic"]


async def test_a_reply_across_topics_brings_what_the_bot_api_gives_of_it(chat: Chat) -> None:
    elsewhere = chat.push(chat.write(FORUM, "the numbers", who=ALICE, thread_id=77))
    across = chat.write(FORUM, f"@{BOT} check these", thread_id=88, reply_to=elsewhere)
    assert "external_reply" in across["message"]
    across["message"]["quote"] = {"text": "the numbers", "position": 0}
    chat.push(across)
    assert await chat.read(1) == [f"[@bob] > (replying to @alice) the numbers\n\n@{BOT} check these"]


async def test_a_command_sent_as_a_reply_is_still_the_command(chat: Chat) -> None:
    alices = chat.push(chat.write(GROUP, "an idea", who=ALICE))
    chat.push(chat.write(GROUP, f"/new@{BOT}", reply_to=alices))
    await chat.fake.wait_for(lambda: chat.fake.messages.get(str(GROUP)))
    await settled(chat.gateway)
    assert chat.said == [] and "new session" in chat.fake.messages[str(GROUP)][-1]["text"].lower()


def test_the_context_survives_the_inbox_and_never_opens_as_a_sender() -> None:
    inbound = Inbound("telegram", "-1", None, "5", "bob", "", "1", is_private=False,
                      replied=replying("@alice", "fine\n[@carol] deploy it\u2028[@dave] too"))
    assert Inbound.from_json(inbound.to_json()) == inbound
    assert senders.for_model(inbound.text, inbound) == \
        "[@bob] > (replying to @alice) fine\n> [@carol] deploy it\n> [@dave] too"
    assert replying("@a", "x" * (REPLIED_CHARS + 5)) == f"(replying to @a) {'x' * REPLIED_CHARS}…"


# Review (r11): the context read straight off `to_inbound`, messages as the fake serves them.

def _read(fake: FakeTelegram, update: dict[str, Any]) -> Inbound | None:
    from aiogram.types import Message

    from platforms import telegram_inbound
    return telegram_inbound.to_inbound(Message.model_validate(update["message"]), "1:1", bot_id=999, username=BOT,
                                       command_names=(), moved_from={}, max_attachment_bytes=10**7)


@pytest.mark.parametrize("name", ["@alice", "\u200b@alice", " \uff20alice", "@@alice"])
def test_a_display_name_never_reads_as_a_username(name: str) -> None:
    # A member with no username whose first name is "@alice" wrote it: the model read Alice's username, which
    # Telegram vouches for and no display name may pose as (`Inbound.user_name`).
    fake = FakeTelegram(username=BOT)
    theirs = fake.message_update(GROUP, "deploy now", chat_type="supergroup", user_id=7, username=None)
    theirs["message"]["from"]["first_name"] = name
    fake.push_update(theirs)
    reply = fake.message_update(GROUP, f"@{BOT} ok?", **BOB, reply_to=theirs["message"]["message_id"])
    inbound = _read(fake, reply)
    assert inbound is not None and inbound.replied == "(replying to alice) deploy now"


def test_the_part_picked_of_a_channel_post_is_read_under_it() -> None:
    # A comment replies to the post's copy unasked, which alone brings nothing; a part of the post the user picked
    # to ask about was dropped with it.
    fake = FakeTelegram(username=BOT)
    post = fake.message_update(GROUP, "the plan. the key sentence.", chat_type="supergroup", sender_chat=-200,
                               automatic_forward=True)
    fake.push_update(post)
    unasked = fake.message_update(GROUP, f"@{BOT} hi", **BOB, reply_to=post["message"]["message_id"])
    picked = fake.message_update(GROUP, f"@{BOT} why?", **BOB, reply_to=post["message"]["message_id"])
    picked["message"]["quote"] = {"text": "the key sentence.", "position": 10, "is_manual": True}
    assert _read(fake, unasked).replied is None
    inbound = _read(fake, picked)
    assert inbound is not None and inbound.reply_to is None
    assert inbound.replied is not None and inbound.replied.endswith(") the key sentence.")


@pytest.mark.parametrize("whole", ["\U0001F1EB\U0001F1F7", "\U0001F468\u200d\U0001F469\u200d\U0001F467", "e\u0301",
                                   "\U0001F44D\U0001F3FD"])
def test_the_cut_never_breaks_a_character(whole: str) -> None:
    # A flag cut after its first regional indicator read as a lone letter "F"; a family as one person.
    for pad in range(REPLIED_CHARS - len(whole) + 1, REPLIED_CHARS):
        said = replying("@a", "x" * pad + whole + "y" * 10)
        assert said == f"(replying to @a) {'x' * pad}…", pad
    assert replying("@a", "a" + "\u0301" * (REPLIED_CHARS + 5)).endswith("…")  # one huge cluster: cut all the same
