"""The bot's question (``clarify``) waiting in one forum topic, answered by a reply from another topic that quotes
it (Telegram's "reply in another chat", the forum's other topic picked: ``external_reply``). The real aiogram
client inside `TelegramAdapter` against the loopback `FakeTelegram`, with the real `Gateway` behind it.

Such a reply names the question's very message: the member it was asked of answers it, as in the question's own
topic. It opened a turn of its own in the topic it was written in, the question left to expire. Only that: a reply
across topics to another message (an earlier answer) is no answer (`test_telegram_question_across_topics`), nor is
another member's reply to the question from elsewhere, a request of their own in their topic."""

from __future__ import annotations

from tests.clock_steps import run_clock_until
from tests.scenarios.test_group_question_replies import BOB, BOT, CAROL, GROUP, QUESTION
from tests.scenarios.test_telegram_question_across_topics import ASKED, EARLIER, fake, group, push, texts

__all__ = ["fake", "group"]  # the fixtures


async def asked(fake, clock) -> int:
    """Bob's request in topic ``ASKED``, and the bot's question there: its message id."""
    push(fake, clock, f"@{BOT} please deploy the app", ASKED, **BOB)
    await run_clock_until(fake, clock, lambda: texts(fake))
    assert texts(fake)[0].startswith(QUESTION)
    return fake.messages[str(GROUP)][0]["message_id"]


def topics(fake) -> list[tuple[str, int | None]]:
    return [(m["text"], m["thread_id"]) for m in fake.messages[str(GROUP)]]


async def test_the_asker_answers_the_question_by_a_reply_from_another_topic(fake, group):
    gateway, clock = group
    question = await asked(fake, clock)
    across = push(fake, clock, "2", EARLIER, reply_to=question, **BOB)
    assert "external_reply" in fake.said[str(GROUP)][across]  # a reply across topics, as Telegram shows it
    await run_clock_until(fake, clock, lambda: len(texts(fake)) == 2)
    assert topics(fake)[1] == ("deploying to: [@bob] production", ASKED)  # where the question was asked
    await run_clock_until(fake, clock, lambda: not any(s.running or s.queue for s in gateway.sessions))
    assert len(texts(fake)) == 2  # no turn of its own in the topic it was written in


async def test_another_members_reply_to_the_question_from_another_topic_is_her_own_request(fake, group):
    gateway, clock = group
    question = await asked(fake, clock)
    push(fake, clock, "staging is down", EARLIER, reply_to=question, **CAROL)
    await run_clock_until(fake, clock, lambda: len(texts(fake)) == 2)
    assert topics(fake)[1] == ("plain answer to [@carol] staging is down", EARLIER)
    push(fake, clock, "2", ASKED, reply_to=question, **BOB)
    await run_clock_until(fake, clock, lambda: len(texts(fake)) == 3)
    assert topics(fake)[2] == ("deploying to: [@bob] production", ASKED)
