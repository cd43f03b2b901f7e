"""In a Telegram group, the answers to commands and the notes about a member's turn quote the message
they answer, as the turns' answers do, through the real aiogram client in `TelegramAdapter` against
the loopback `FakeTelegram`, with the real `Gateway`.

Several members' commands, their confirmations and the notes about their turns interleave in a
group: unquoted, `Stopped the running turn.` or `(Stopped from the operator console.)` is nobody's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.scenarios.test_group_replies import PRIVATE, answers, ask
from tests.scenarios.test_group_turns import BOB, BOT, CAROL, GROUP, handled


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


@pytest.fixture
async def chat(fake, tmp_path):
    started: list[Gateway] = []

    async def start(model: ScriptedModel, **sections: Any) -> Gateway:
        sections.setdefault("platforms", {"telegram": {"allow_all": True}})
        config = make_config(tmp_path, **sections)
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
        gateway = await start_gateway(config, [adapter], model=model)
        started.append(gateway)
        await fake.wait_for(lambda: fake.calls_to("getUpdates"))
        return gateway

    yield start
    for gateway in started:
        await gateway.stop(grace=0)


async def test_each_members_command_is_answered_quoting_it(fake, chat):
    model = ScriptedModel({"parent": [[{"wait": "bob", "text": "never said"}]]})
    gateway = await chat(model)
    _, bobs = ask(fake, GROUP, f"@{BOT} how big is the release?", **BOB)
    await model.reached("bob")
    help_update, carols_help = ask(fake, GROUP, "/help", **CAROL)
    await fake.wait_for(lambda: handled(gateway, help_update))
    _, carols_stop = ask(fake, GROUP, "/stop", **CAROL)
    # A group's messages go 3 s apart (`GROUP_PACING`): the note to Bob, then Carol's answer.
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 3, timeout=10)
    _, bobs_new = ask(fake, GROUP, "/new", **BOB)
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 4, timeout=10)
    await settled(gateway)
    helped, told, stopped, renewed = answers(fake, GROUP)
    assert helped[0].startswith("/stop — ") and stopped[0] == "Stopped the running turn."
    assert renewed[0].startswith("Started a new session.")
    assert [quoted for _, quoted in (helped, stopped, renewed)] == [carols_help, carols_stop, bobs_new]
    assert told == ("(Stopped by @carol's /stop.)", bobs)  # Bob's question goes unanswered: he is told why


async def test_a_private_chats_command_answer_quotes_nothing(fake, chat):
    gateway = await chat(ScriptedModel({"parent": []}))
    ask(fake, PRIVATE, "/stop")
    await fake.wait_for(lambda: fake.messages[str(PRIVATE)])
    await settled(gateway)
    assert answers(fake, PRIVATE) == [("Nothing was running.", None)]
    assert "reply_parameters" not in fake.calls_to("sendMessage")[0]


async def test_new_with_a_message_quotes_it_in_its_confirmation_and_its_answer(fake, chat):
    gateway = await chat(ScriptedModel({"parent": [[{"text": "a fresh start"}]]}))
    _, asked = ask(fake, GROUP, f"/new @{BOT} plan the trip", **BOB)
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 2)
    await settled(gateway)
    [(confirmation, first), (answer, second)] = answers(fake, GROUP)
    assert confirmation.startswith("Started a new session.") and answer == "a fresh start"
    assert (first, second) == (asked, asked)


async def test_a_stop_the_chat_did_not_ask_for_is_told_quoting_the_message_of_the_stopped_turn(fake, chat):
    model = ScriptedModel({"parent": [[{"wait": "bob", "text": "never said"}], [{"text": "answer for carol"}]]})
    gateway = await chat(model)
    _, bobs = ask(fake, GROUP, f"@{BOT} how big is the release?", **BOB)
    await model.reached("bob")
    carol, carols = ask(fake, GROUP, f"@{BOT} who is on call tonight?", **CAROL)
    await fake.wait_for(lambda: handled(gateway, carol))
    session = next(iter(gateway.sessions))
    assert gateway.sessions.stop_turn(session, "stopped from the operator console", why="console")
    await fake.wait_for(lambda: len(fake.messages[str(GROUP)]) == 2)
    await settled(gateway)
    assert answers(fake, GROUP) == [("(Stopped from the operator console.)", bobs), ("answer for carol", carols)]


async def test_the_refusal_of_a_member_not_allowed_quotes_their_message(fake, chat):
    gateway = await chat(ScriptedModel({"parent": []}), platforms={"telegram": {"allowed_users": ["carol"]}})
    _, bobs = ask(fake, GROUP, f"@{BOT} how big is the release?", **BOB)
    await fake.wait_for(lambda: fake.messages[str(GROUP)])
    await settled(gateway)
    [(refusal, quoted)] = answers(fake, GROUP)
    assert refusal.startswith("Sorry — this assistant only answers people") and quoted == bobs
