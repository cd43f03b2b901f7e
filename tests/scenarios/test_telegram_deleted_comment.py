"""An answer to a comment under a channel's post, the comment deleted before the answer went, on Telegram: the real
aiogram client in `TelegramAdapter` against the loopback `FakeTelegram`, with the real `Gateway` behind it.

The answer's first message quotes the comment, which is how it lands under the post (the Bot API takes no
``message_thread_id`` outside a forum). With the comment gone, a reply sent anyway (``allow_sending_without_reply``)
replied to nothing and landed in the discussion group's own chat, away from the post, while the rest of the answer
went under the post: it replies to the post instead, as the answer's other messages do."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from platforms.fakes.telegram import FakeTelegram
from tests.scenarios.test_telegram_comment_threads import BOT, GROUP, LONG, comment, post


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


@pytest.mark.parametrize("answer", ["the answer", LONG])
async def test_the_answer_to_a_comment_deleted_meanwhile_still_lands_under_the_post(fake, telegram_gateways, answer):
    model = ScriptedModel({"parent": [[{"wait": "asked", "text": answer}]]})
    gateway = await telegram_gateways(fake, model, progress="off")
    posted = post(fake)
    asked = comment(fake, f"@{BOT} what changed?", on=posted)
    await model.reached("asked")
    fake.delete_user_message(GROUP, asked)
    model.release("asked")
    parts = 1 if answer == "the answer" else 2
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == parts, timeout=10)  # 3 s apart in a group
    await settled(gateway)
    sent = fake.messages[str(GROUP)]
    assert [(m["thread_id"], m["reply_to"]) for m in sent] == [(posted, posted)] * parts  # once each, under the post
    first = json.loads(fake.calls_to("sendMessage")[0]["reply_parameters"])
    assert first["message_id"] == asked  # the comment was quoted while it was there to quote


async def test_an_answer_to_a_comment_still_there_quotes_it(fake, telegram_gateways):
    gateway = await telegram_gateways(fake, ScriptedModel({"parent": [[{"text": "the answer"}]]}), progress="off")
    posted = post(fake)
    asked = comment(fake, f"@{BOT} what changed?", on=posted)
    await fake.wait_for(lambda: fake.messages[str(GROUP)])
    await settled(gateway)
    assert [(m["thread_id"], m["reply_to"]) for m in fake.messages[str(GROUP)]] == [(posted, asked)]
    assert len(fake.calls_to("sendMessage")) == 1
