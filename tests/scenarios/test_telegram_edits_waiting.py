"""A user edits a message still waiting for its turn on Telegram: the turn answers it as edited. The real aiogram
client inside `TelegramAdapter` against the loopback `FakeTelegram` (``edited_message`` updates), with the real
`Gateway` (`gateway.message_edits`).

An edit of a message whose turn runs, or was answered, changes nothing and starts nothing; the edit of a waiting
one is kept in the inbox, so a restart answers it as edited too."""

from __future__ import annotations

import asyncio
import json

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter
from tests.scenarios.test_group_replies import chat, fake  # noqa: F401  (fixtures)
from tests.scenarios.test_group_turns import BOB, BOT, CAROL, GROUP
from tests.scenarios.test_start_replay import SlowToAuthSlack

PRIVATE = 42


def gated_echo(gated: str = "first") -> ScriptedModel:
    """Echoes what the model reads; the message ending in ``gated`` waits at the gate ``first``."""
    def parent(request: ModelRequest) -> dict:
        text = str(request.messages[-1]["content"])
        return {"wait": "first", "text": f"echo: {text}"} if text.endswith(gated) else {"text": f"echo: {text}"}
    return ScriptedModel({"parent": parent})


def write(telegram: FakeTelegram, text: str, chat_id: int = PRIVATE, **who: object) -> int:
    """A user writes ``text``: its message id."""
    update = telegram.message_update(chat_id, text, **who)  # type: ignore[arg-type]
    telegram.push_update(update)
    return update["message"]["message_id"]


def queued(gateway: Gateway) -> bool:
    return any(item.event is not None for session in gateway.sessions for item in session.queue)


async def test_an_edit_of_a_message_waiting_for_its_turn_is_what_the_turn_answers(fake, chat):  # noqa: F811
    model = gated_echo()
    gateway = await chat(model, display={"busy_input_mode": "queue"})
    assert "edited_message" in json.loads(fake.calls_to("getUpdates")[0]["allowed_updates"])
    first = write(fake, "first")
    await model.reached("first")
    prod = write(fake, "deploy to prod")
    await fake.wait_for(lambda: queued(gateway))
    fake.edit_message(PRIVATE, first, "first, running")  # its turn runs: left as it is
    fake.edit_message(PRIVATE, prod, "deploy to staging")  # waiting for its turn
    await fake.wait_for(lambda: not fake.pending)  # each edit handed over and confirmed
    model.release("first")
    await fake.wait_for(lambda: len(fake.messages[str(PRIVATE)]) == 2)
    fake.edit_message(PRIVATE, first, "first, answered")  # answered already: no turn of its own
    fake.edit_message(PRIVATE, prod, "deploy to dev")
    write(fake, "last")
    await fake.wait_for(lambda: len(fake.messages[str(PRIVATE)]) == 3)
    await settled(gateway)
    assert [m["text"] for m in fake.messages[str(PRIVATE)]] == [
        "echo: first", "echo: deploy to staging", "echo: last"]
    await fake.wait_for(lambda: not fake.pending)


async def test_a_restart_answers_the_waiting_message_as_edited(fake, chat):  # noqa: F811
    model = gated_echo()
    gateway = await chat(model, display={"busy_input_mode": "queue"})
    write(fake, "first")
    await model.reached("first")
    prod = write(fake, "deploy to prod")
    await fake.wait_for(lambda: queued(gateway))
    fake.edit_message(PRIVATE, prod, "deploy to staging")
    await fake.wait_for(lambda: not fake.pending)
    await gateway.stop(grace=0)  # the running turn runs again after the start, the edited message after it
    again = await chat(gated_echo(gated="never"), display={"busy_input_mode": "queue"})
    await fake.wait_for(lambda: len(fake.messages[str(PRIVATE)]) == 2)
    await settled(again)
    assert [m["text"] for m in fake.messages[str(PRIVATE)]] == ["echo: first", "echo: deploy to staging"]


async def test_an_edit_made_while_the_gateway_was_down_reaches_the_message_replayed_after_it(
        fake, chat, tmp_path):  # noqa: F811
    model = gated_echo()
    gateway = await chat(model, display={"busy_input_mode": "queue"})
    first = write(fake, "first")
    await model.reached("first")
    prod = write(fake, "deploy to prod")
    await fake.wait_for(lambda: queued(gateway))
    await fake.wait_for(lambda: not fake.pending)
    await gateway.stop(grace=0)  # the running turn runs again after the start, the waiting message after it
    fake.edit_message(PRIVATE, first, "first, edited")  # its turn had begun: left as it is
    fake.edit_message(PRIVATE, prod, "deploy to staging")
    fake.edit_message(PRIVATE, prod, "/new")  # into a command: left as it was
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}}, display={"busy_input_mode": "queue"})
    async with SlowToAuthSlack() as slack:
        # Telegram starts first and hands the edit over while Slack's start holds back the replay.
        adapters = [TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10),
                    SlackAdapter(bot_token=slack.bot_token, app_token=slack.app_token, api_base=slack.api_base,
                                 ping_interval=0.2)]
        starting = asyncio.ensure_future(start_gateway(config, adapters, model=gated_echo(gated="never")))
        try:
            await fake.wait_for(lambda: not fake.pending)  # the edit handed over and confirmed
            slack.auth.set()
            again = await asyncio.wait_for(starting, 10)
            try:
                await fake.wait_for(lambda: len(fake.messages[str(PRIVATE)]) == 2)
                await settled(again)
            finally:
                await again.stop(grace=0)
        finally:
            slack.auth.set()
            if not starting.done():
                starting.cancel()
    assert [m["text"] for m in fake.messages[str(PRIVATE)]] == ["echo: first", "echo: deploy to staging"]


async def test_in_a_topic_another_members_waiting_message_is_answered_as_edited(fake, chat):  # noqa: F811
    model = gated_echo()
    gateway = await chat(model)
    write(fake, f"@{BOT} first", GROUP, **BOB, thread_id=7)
    await model.reached("first")
    carols = write(fake, f"@{BOT} who is on call tonight?", GROUP, **CAROL, thread_id=7)
    await fake.wait_for(lambda: queued(gateway))  # another member's message waits, whatever the busy mode
    fake.edit_message(GROUP, carols, f"@{BOT} who is on call tomorrow?")
    fake.edit_message(GROUP, carols, "/new")  # into a command: routed as it came, never so by an edit
    await fake.wait_for(lambda: not fake.pending)
    model.release("first")
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 2)
    await settled(gateway)
    assert [(m["text"], m["thread_id"], m["reply_to"]) for m in fake.messages[str(GROUP)]] == [
        (f"echo: [@bob] @{BOT} first", 7, 1), (f"echo: [@carol] @{BOT} who is on call tomorrow?", 7, carols)]
