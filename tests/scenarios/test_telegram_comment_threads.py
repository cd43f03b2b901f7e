"""Where an answer lands on Telegram when the question came from a thread, end to end: the real aiogram client in
`TelegramAdapter` against the loopback `FakeTelegram`, with the real `Gateway` behind it.

Under a channel's post (a comment, in the channel's discussion group) every message of the answer lands in the
post's comment thread: the Bot API takes no ``message_thread_id`` there, so the parts that do not quote the
question reply to the post's copy. In a forum topic an admin closed or deleted meanwhile, the answer is given up
at once (Telegram refuses it for good), not retried, and the forum's other topics are answered as usual."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from platforms.fakes.telegram import FakeTelegram

BOT = "sb_comment_test_bot"
GROUP, CHANNEL = -1002, -1003
BOB = dict(chat_type="supergroup", user_id=5, username="bob")
LONG = "\n\n".join(f"paragraph {i} " + "x" * 900 for i in range(6))  # two parts of Telegram's 4096


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


def post(fake: FakeTelegram) -> int:
    """The channel posts: Telegram copies the post into its discussion group, where it heads the comments."""
    update = fake.message_update(GROUP, "Release 2.0 is out", chat_type="supergroup", sender_chat=CHANNEL,
                                 automatic_forward=True)
    fake.push_update(update)
    return update["message"]["message_id"]


def comment(fake: FakeTelegram, text: str, on: int) -> int:
    """Bob comments under the post, replying to ``on``: the post's copy, or a message under it."""
    update = fake.message_update(GROUP, text, reply_to=on, **BOB)
    assert "message_thread_id" in update["message"] and "is_topic_message" not in update["message"]
    fake.push_update(update)
    return update["message"]["message_id"]


async def test_every_part_of_an_answer_to_a_comment_lands_under_the_post(fake, telegram_gateways):
    gateway = await telegram_gateways(fake, ScriptedModel({"parent": [[{"text": LONG}]]}), progress="off")
    posted = post(fake)
    asked = comment(fake, f"@{BOT} what changed?", on=posted)
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 2, timeout=10)
    await settled(gateway)
    sent = fake.messages[str(GROUP)]
    assert "paragraph 5" in sent[-1]["text"]
    assert [m["thread_id"] for m in sent] == [posted, posted]  # none in the group's own chat
    assert [m["reply_to"] for m in sent] == [asked, posted]  # the first quotes the question


async def test_a_follow_up_replying_to_the_answer_is_answered_under_the_post_too(fake, telegram_gateways):
    model = ScriptedModel({"parent": [[{"text": "short answer"}], [{"text": LONG}]]})
    gateway = await telegram_gateways(fake, model, progress="off")
    posted = post(fake)
    comment(fake, f"@{BOT} what changed?", on=posted)
    await fake.wait_for(lambda: fake.messages[str(GROUP)])
    answer = fake.messages[str(GROUP)][0]["message_id"]
    follow_up = comment(fake, "and in detail?", on=answer)  # a reply to the bot: for it, no mention needed
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 3, timeout=10)
    await settled(gateway)
    sent = fake.messages[str(GROUP)]
    assert [m["thread_id"] for m in sent] == [posted] * 3
    assert [m["reply_to"] for m in sent[1:]] == [follow_up, posted]


async def test_an_answer_after_a_message_the_model_sent_first_lands_under_the_post(fake, telegram_gateways):
    # The model's send_message takes the question's quote: the answer after it quotes nothing, and its turn is
    # tied to the post's thread from the hand-over on, not from the first message quoting the question.
    first = {"tool_calls": [{"name": "send_message", "arguments": {"text": "looking into it"}}]}
    model = ScriptedModel({"parent": [[first, {"text": "here is what changed"}]]})
    gateway = await telegram_gateways(fake, model, progress="off")
    posted = post(fake)
    asked = comment(fake, f"@{BOT} what changed?", on=posted)
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 2, timeout=10)
    await settled(gateway)
    sent = fake.messages[str(GROUP)]
    assert [(m["text"], m["thread_id"], m["reply_to"]) for m in sent] == [
        ("looking into it", posted, asked), ("here is what changed", posted, posted)]


async def test_a_progress_card_shown_before_the_answer_lands_under_the_post(fake, telegram_gateways):
    model = ScriptedModel({"parent": [[{"wait": "go", "text": "the answer"}]]})
    gateway = await telegram_gateways(fake, model, progress="card", progress_delay=0.01)
    posted = post(fake)
    comment(fake, f"@{BOT} what changed?", on=posted)
    await model.reached("go")
    await fake.wait_for(lambda: fake.messages[str(GROUP)], timeout=10)  # the card, first of the turn's
    model.release("go")
    await fake.wait_for(lambda: any(m["text"] == "the answer" for m in fake.messages[str(GROUP)]), timeout=10)
    await settled(gateway)
    assert {m["thread_id"] for m in fake.messages[str(GROUP)]} == {posted}


FORUM = -1001


@pytest.mark.parametrize("admin", ["close_topic", "delete_topic"])
async def test_an_answer_to_a_topic_closed_or_deleted_meanwhile_is_given_up_and_other_topics_go_on(
        fake, telegram_gateways, admin, caplog):
    caplog.set_level(logging.WARNING, logger="gateway.outbox")
    model = ScriptedModel({"parent": lambda request: (
        {"wait": "77", "text": LONG} if "in 77" in str(request.messages[-1].get("content")) else {"text": "in 88"})})
    gateway = await telegram_gateways(fake, model, progress="off")
    fake.push_message(FORUM, f"@{BOT} a question in 77", thread_id=77, **BOB)
    await model.reached("77")
    getattr(fake, admin)(FORUM, 77)
    model.release("77")
    await settled(gateway, timeout=10)
    fake.push_message(FORUM, f"@{BOT} a question in 88", thread_id=88, **BOB)
    await fake.wait_for(lambda: fake.messages[str(FORUM)], timeout=10)
    await settled(gateway)
    assert [(m["thread_id"], m["text"]) for m in fake.messages[str(FORUM)]] == [(88, "in 88")]
    assert not gateway.store.outbox.with_status("pending", 10)  # nothing left to retry
    refusal = "TOPIC_CLOSED" if admin == "close_topic" else "message thread not found"
    failed = [r.getMessage() for r in caplog.records if r.name == "gateway.outbox"]
    assert failed and all(f"chat {FORUM}" in line and refusal in line for line in failed)
