"""A user edits or deletes a message on Telegram: the real aiogram client inside `TelegramAdapter`
against the loopback `FakeTelegram`, with the real `Gateway`.

An edit (``edited_message``) is never answered as a message of its own, nor changes the text of a
message running or answered; a message still waiting for its turn is answered as edited
(docs/platforms/telegram.md; `tests.scenarios.test_telegram_edits_waiting`). Telegram tells bots of no
deletion."""

from __future__ import annotations

import json
import time
from typing import Any

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from platforms.fakes.telegram import FakeTelegram
from tests.scenarios.test_group_replies import chat, fake  # noqa: F401  (fixtures)

PRIVATE = 42


def gated_echo() -> ScriptedModel:
    """Echoes each message; the one saying "first" waits at the gate ``first``."""
    def parent(request: ModelRequest) -> dict:
        text = str(request.messages[-1]["content"])
        return {"wait": "first", "text": f"echo: {text}"} if text == "first" else {"text": f"echo: {text}"}
    return ScriptedModel({"parent": parent})


def write(telegram: FakeTelegram, text: str) -> dict[str, Any]:
    update = telegram.message_update(PRIVATE, text)
    telegram.push_update(update)
    return update["message"]


def edit(telegram: FakeTelegram, message: dict[str, Any], text: str) -> None:
    """The user edits ``message``: Telegram's ``edited_message`` update."""
    telegram.push_update({"edited_message": {**message, "text": text, "edit_date": int(time.time())}})


async def test_edits_change_only_a_message_waiting_for_its_turn(fake, chat):  # noqa: F811  (the fixtures imported)
    model = gated_echo()
    gateway = await chat(model, display={"busy_input_mode": "queue"})
    asked = ["edited_message", "message", "my_chat_member"]
    assert json.loads(fake.calls_to("getUpdates")[0]["allowed_updates"]) == asked
    first = write(fake, "first")
    await model.reached("first")
    prod = write(fake, "deploy to prod")
    await fake.wait_for(lambda: any(item.event is not None for s in gateway.sessions for item in s.queue))
    edit(fake, first, "first, running")  # its turn running
    edit(fake, prod, "deploy to staging")  # waiting for its turn
    model.release("first")
    await fake.wait_for(lambda: len(fake.messages[str(PRIVATE)]) == 2)
    edit(fake, first, "first, answered")  # answered already
    write(fake, "last")
    await fake.wait_for(lambda: len(fake.messages[str(PRIVATE)]) == 3)
    await settled(gateway)
    assert [m["text"] for m in fake.messages[str(PRIVATE)]] == [
        "echo: first", "echo: deploy to staging", "echo: last"]
    await fake.wait_for(lambda: not fake.pending)  # the edits were confirmed, not left for a later start
