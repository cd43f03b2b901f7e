"""A member deletes a message on Discord: the real discord.py client inside `DiscordAdapter` against `FakeDiscord`
(``MESSAGE_DELETE``, ``MESSAGE_DELETE_BULK``), with the real `Gateway` (`gateway.message_edits`).

A message still waiting for its turn that its user deletes (a secret pasted by mistake) is dropped: never answered,
its text never sent to the model, its inbox record settled without it (docs/platforms/discord.md); one whose turn
has begun is too late, and answered. A deletion of a message the gateway never took (the bot's own, one not for the
bot) changes nothing."""

from __future__ import annotations

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from gateway.app import Gateway
from gateway.testing import settled
from platforms.fakes.discord import FakeDiscord
from tests.platforms.test_discord_unheld_thread import unheld
from tests.scenarios.test_discord_chat import fake, start  # noqa: F401  (fixtures)
from tests.scenarios.test_discord_edits import gated_echo, waiting
from tests.scenarios.test_discord_replies import CHANNEL, GUILD, THREAD

BOB, CAROL, DAVE = 42, 43, 44
QUEUE = {"busy_input_mode": "queue"}


def nowhere(gateway: Gateway, model, secret: str) -> bool:
    """Whether ``secret`` reached neither the model nor the inbox."""
    rows = gateway.store.db.read("SELECT payload FROM gateway_inbox")
    return not any(secret in str(m) for request in model.requests for m in request.messages) \
        and not any(secret in str(row) for row in rows)


def send(discord: FakeDiscord, where: str, user: int, text: str) -> str:
    """``user``'s message for the bot: in a DM (``where`` "dm"), else in the channel or ``THREAD``."""
    if where == "dm":
        return discord.push_dm(user, text)
    return discord.push_guild_message(GUILD, CHANNEL, user, text, mention_bot=True,
                                   thread_id=THREAD if where == "thread" else None)


@pytest.mark.parametrize("where", ["dm", "channel", "thread"])
async def test_a_message_deleted_while_it_waits_is_not_answered(fake, start, where):  # noqa: F811
    model = gated_echo()
    gateway = await start(model=model, display=QUEUE)
    channel = fake.dm_channel(BOB) if where == "dm" else THREAD if where == "thread" else CHANNEL
    other = BOB if where == "dm" else CAROL  # a DM has one member
    first = send(fake, where, BOB, "first")
    await model.reached("first")
    pasted = send(fake, where, other, "my password is hunter2")
    send(fake, where, BOB, "next")
    await fake.wait_for(lambda: len(waiting(gateway)) == 2)
    fake.delete_message(channel, pasted)  # waiting for its turn: dropped
    fake.delete_message(channel, first)  # its turn running: too late, answered
    await fake.wait_for(lambda: len(waiting(gateway)) == 1)
    model.release("first")
    await fake.wait_for(lambda: len(fake.bot_messages(channel)) == 2)
    await settled(gateway)
    assert [m.content for m in fake.bot_messages(channel)] == ["echo: first", "echo: next"]
    assert gateway.store.inbox.settled("discord", pasted)
    assert nowhere(gateway, model, "hunter2")


async def test_a_moderators_purge_drops_each_waiting_message_and_nothing_else(fake, start):  # noqa: F811
    model = gated_echo()
    gateway = await start(model=model, display=QUEUE)
    fake.push_guild_message(GUILD, CHANNEL, BOB, "earlier", mention_bot=True)
    await fake.wait_for(lambda: len(fake.bot_messages(CHANNEL)) == 1)
    answer = fake.bot_messages(CHANNEL)[0].id
    send(fake, "channel", BOB, "first")
    await model.reached("first")
    chatter = fake.push_guild_message(GUILD, CHANNEL, DAVE, "lunch?")  # not for the bot: never taken
    spam = [send(fake, "channel", CAROL, f"spam {n}") for n in range(2)]
    send(fake, "channel", BOB, "next")
    await fake.wait_for(lambda: len(waiting(gateway)) == 3)
    fake.delete_messages(CHANNEL, [answer, chatter, *spam])  # the bot's own answer among them
    await fake.wait_for(lambda: len(waiting(gateway)) == 1)
    model.release("first")
    await fake.wait_for(lambda: len(fake.bot_messages(CHANNEL)) == 2)  # the answer purged is gone
    await settled(gateway)
    assert [m.content for m in fake.bot_messages(CHANNEL)] == ["echo: first", "echo: next"]
    assert all(gateway.store.inbox.settled("discord", s) for s in spam)
    assert nowhere(gateway, model, "spam")


async def test_in_a_thread_discord_py_does_not_hold_a_waiting_message_deleted_is_dropped(fake, start):  # noqa: F811
    model = gated_echo()
    gateway = await start(model=model, display=QUEUE)
    send(fake, "thread", BOB, "first")
    await model.reached("first")
    pasted = unheld(fake, THREAD, "my password is hunter2")  # the thread asked of Discord before it is handed over
    await fake.wait_for(lambda: len(waiting(gateway)) == 1)
    lookups = len(fake.calls_to("GET /channels/{channel_id}"))
    fake.delete_message(THREAD, pasted)  # in the thread the gateway knows, with no call to Discord
    await fake.wait_for(lambda: not waiting(gateway))
    model.release("first")
    await fake.wait_for(lambda: fake.bot_messages(THREAD))
    await settled(gateway)
    assert [m.content for m in fake.bot_messages(THREAD)] == ["echo: first"]
    assert len(fake.calls_to("GET /channels/{channel_id}")) == lookups
    assert nowhere(gateway, model, "hunter2")
