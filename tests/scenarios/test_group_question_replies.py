"""In a Telegram group, what answers the bot's question (``clarify``): a reply to the question, or a message
replying to nothing; not a reply to another message (an earlier answer of the bot's, another member's message),
which is a request of its own, answered after the turn. The real aiogram client inside `TelegramAdapter` against
the loopback `FakeTelegram`, with the real `Gateway` behind it."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.app import Gateway
from gateway.testing import make_config, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.asking_model import asking_parent
from tests.clock_steps import run_clock_until

BOT = "sb_group_question_bot"
GROUP = -1001
BOB = dict(chat_type="supergroup", user_id=5, username="bob")
CAROL = dict(chat_type="supergroup", user_id=6, username="carol")
QUESTION = "❓ Which environment?"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


@pytest.fixture
async def group(fake, tmp_path) -> AsyncIterator[tuple[Gateway, FakeClock]]:
    """A gateway whose model asks before it deploys, on a clock the test moves: a group's messages are paced three
    seconds apart."""
    clock = FakeClock(autojump=False, start=time.time())
    display = {"progress": "off", "long_running_notifications": False}
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}}, display=display)
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
    gateway = await start_gateway(config, [adapter], model=ScriptedModel({"parent": asking_parent}), clock=clock)
    try:
        yield gateway, clock
    finally:
        await gateway.stop(grace=0)


def push(fake: FakeTelegram, clock: FakeClock, text: str, *, reply_to: int | None = None, **user) -> int:
    """A member writes ``text`` in the group, the message dated by ``clock`` as Telegram dates it by its own: else
    an answer looked sent before the question the clock's minutes ago asked."""
    update = fake.message_update(GROUP, text, reply_to=reply_to, **user)
    update["message"]["date"] = int(clock.time())
    fake.push_update(update)
    return update["message"]["message_id"]


def said(fake: FakeTelegram) -> list[dict]:
    return fake.messages[str(GROUP)]


def texts(fake: FakeTelegram) -> list[str]:
    return [m["text"] for m in said(fake)]


def waits(gateway: Gateway) -> bool:
    """Whether a message waits for its turn."""
    return any(session.queue for session in gateway.sessions)


async def asked(fake: FakeTelegram, clock: FakeClock, *, replying_to_carol: bool = False) -> tuple[int, int]:
    """Carol had an answer from the bot, then Bob asked it to deploy (``replying_to_carol``: replying to her message,
    so in the reply chain it heads): the ids of the answer and of the question."""
    carols = push(fake, clock, f"@{BOT} when is the release?", **CAROL)
    await run_clock_until(fake, clock, lambda: said(fake))
    push(fake, clock, f"@{BOT} please deploy the app", **BOB, reply_to=carols if replying_to_carol else None)
    await run_clock_until(fake, clock, lambda: len(said(fake)) == 2)
    assert texts(fake)[1].startswith(QUESTION)
    return said(fake)[0]["message_id"], said(fake)[1]["message_id"]


async def test_a_reply_to_an_earlier_answer_is_a_request_of_its_own_not_the_answer(fake, group):
    # Carol's follow-up on her earlier answer was taken for the answer to Bob's question: it deployed to
    # "and the one after?", and Bob's reply to the question became a message of its own.
    gateway, clock = group
    earlier, question = await asked(fake, clock)
    push(fake, clock, "and the one after?", **CAROL, reply_to=earlier)
    await run_clock_until(fake, clock, lambda: waits(gateway) or len(said(fake)) == 3)  # or taken for the answer
    push(fake, clock, "2", **BOB, reply_to=question)
    await run_clock_until(fake, clock, lambda: len(said(fake)) == 4)
    assert texts(fake)[2:] == ["deploying to: [@bob] production", "plain answer to [@carol] and the one after?"]


async def test_a_mention_replying_to_another_members_message_is_not_the_answer(fake, group):
    gateway, clock = group
    _, question = await asked(fake, clock)
    bobs = push(fake, clock, "the staging box is down again", **BOB)  # not for the bot: it hears nothing of it
    push(fake, clock, f"@{BOT} can you look at this?", **CAROL, reply_to=bobs)
    await run_clock_until(fake, clock, lambda: waits(gateway) or len(said(fake)) == 3)  # or taken for the answer
    push(fake, clock, "1", **BOB, reply_to=question)
    await run_clock_until(fake, clock, lambda: len(said(fake)) == 4)
    # Carol's request reads Bob's message she replied to (`Inbound.replied`), as any reply does.
    assert texts(fake)[2:] == ["deploying to: [@bob] staging", "plain answer to [@carol] > (replying to @bob) the"
                               f" staging box is down again\n\n@{BOT} can you look at this?"]


async def test_a_mention_replying_to_the_head_of_a_reply_chain_is_not_the_answer(fake, group):
    # Telegram puts a reply in a supergroup in the thread of its reply chain: replying to a message that replies to
    # nothing, its ``message_thread_id`` is that message's id, as a forum topic's messages carry their topic's.
    gateway, clock = group
    _, question = await asked(fake, clock)
    bobs = push(fake, clock, "the staging box is down again", **BOB)
    push(fake, clock, f"@{BOT} can you look at this?", **CAROL, reply_to=bobs)
    await run_clock_until(fake, clock, lambda: waits(gateway) or len(said(fake)) == 3)  # or taken for the answer
    request = said(fake)[1]["reply_to"]  # the question quotes Bob's request, which heads its chain
    answer = push(fake, clock, "1", **BOB, reply_to=question)
    assert fake.said[str(GROUP)][answer]["message_thread_id"] == request  # the question's chain, which it heads
    await run_clock_until(fake, clock, lambda: len(said(fake)) == 4)
    # Carol's request reads Bob's message she replied to (`Inbound.replied`), as any reply does.
    assert texts(fake)[2:] == ["deploying to: [@bob] staging", "plain answer to [@carol] > (replying to @bob) the"
                               f" staging box is down again\n\n@{BOT} can you look at this?"]


@pytest.mark.parametrize("heads_its_chain", [True, False])
async def test_a_reply_to_the_request_the_question_quotes_answers_it(fake, group, heads_its_chain):
    # The question quotes Bob's request: replying to that, he answers what it asks about. Taken for a request of
    # its own, his answer waited behind the question until it gave up, ten minutes on. The request replies to
    # nothing (it heads its reply chain), or is itself a reply in a chain that Carol's first message heads.
    _, clock = group
    await asked(fake, clock, replying_to_carol=not heads_its_chain)
    request = said(fake)[1]["reply_to"]
    assert request is not None
    chain = request if heads_its_chain else said(fake)[0]["reply_to"]
    answer = push(fake, clock, f"@{BOT} production", **BOB, reply_to=request)  # a mention: else unheard
    assert fake.said[str(GROUP)][answer]["message_thread_id"] == chain
    await run_clock_until(fake, clock, lambda: len(said(fake)) == 3)
    assert texts(fake)[2] == f"deploying to: [@bob] @{BOT} production"


@pytest.mark.parametrize("replying", [True, False])
async def test_a_reply_to_the_question_or_to_nothing_still_answers_it(fake, group, replying):
    _, clock = group
    _, question = await asked(fake, clock)
    if replying:
        push(fake, clock, "2", **CAROL, reply_to=question)
    else:
        push(fake, clock, f"@{BOT} production", **CAROL)
    await run_clock_until(fake, clock, lambda: len(said(fake)) == 3)
    assert texts(fake)[2].startswith("deploying to: [@carol]") and texts(fake)[2].endswith("production")
