"""A /stop or /new sent while the gateway was down and handed over after the restart, behind
messages sent later, through the real aiogram client in `TelegramAdapter` against the loopback
`FakeTelegram`, with the real `Gateway` behind it.

Telegram dates each message (``date``, the inbound's ``sent_at``); Slack's and Discord's catch-up
hands over what was said meanwhile beside live events, Telegram a backlog, a failed event is
tried again late: a command may come after a message sent after it. It ends what was there when
it was sent, never the turn of a later message, which was not what it meant to stop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.commands import NEW_SENT_BEFORE, STOP_SENT_BEFORE, new_sent_before_answered, stop_spared
from gateway.testing import settled
from platforms.fakes.telegram import FakeTelegram
from tests.gateway.test_commands import finishing_script
from tests.hanging_children import HANGING_CHILDREN, children_hanging, delegating_parent, hanging_child

CHAT = 42


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
def chat(fake, telegram_gateways):
    """Starts a gateway on a Telegram adapter pointed at the fake; subagents run inline, or in the
    background."""

    async def start(model: ScriptedModel, busy_input_mode: str = "interrupt", *, background: bool = False) -> Gateway:
        # Telegram's interim messages on: subagents run in the background (delegation.gateway_mode auto).
        return await telegram_gateways(fake, model, interim_assistant_messages=background,
                                       busy_input_mode=busy_input_mode)

    return start


def send(fake: FakeTelegram, text: str, *, ago: int = 0) -> int:
    """The user wrote ``text`` ``ago`` seconds before Telegram hands it over."""
    update = fake.message_update(CHAT, text)
    update["message"]["date"] -= ago
    return fake.push_update(update)


def texts(fake: FakeTelegram) -> list[str]:
    return [m["text"] for m in fake.messages[str(CHAT)]]


def release_children(model: ScriptedModel) -> None:
    for task in HANGING_CHILDREN["tasks"]:
        model.release(task["goal"])


async def test_a_stop_sent_before_the_running_turns_message_does_not_stop_it(fake, chat):
    # Handed over after the restart, behind a message sent later, it stopped the turn of that
    # message and its subagents, and dropped the message sent after it that waited.
    model = ScriptedModel({"parent": delegating_parent, "leaf": hanging_child})
    gateway = await chat(model, "queue")
    send(fake, "please delegate this")
    await children_hanging(model)
    later = send(fake, "and what else?")
    event = f"{fake.bot_user['id']}:{later}"  # Telegram's event ids name the bot too
    await fake.wait_for(lambda: gateway.store.inbox.received_at("telegram", event) is not None)
    send(fake, "/stop", ago=3600)  # while the gateway was down
    await fake.wait_for(lambda: texts(fake))
    assert texts(fake) == [STOP_SENT_BEFORE]
    session = next(iter(gateway.sessions))
    assert not session.running.suppressed and len(gateway.host.children.children(session.session_id)) == 2
    release_children(model)
    await fake.wait_for(lambda: len(texts(fake)) == 3)
    await fake.wait_for(lambda: not fake.pending)
    await settled(gateway, timeout=10)
    assert texts(fake) == [STOP_SENT_BEFORE, "I started the subagents.", "all done"]


async def test_a_late_stop_still_stops_the_turn_of_a_message_sent_before_it(fake, chat):
    # What it was meant for: here the turn of a message from before the restart, run again after it.
    # The message sent after the stop, waiting behind that turn, was not: it is answered.
    model = ScriptedModel({"parent": delegating_parent, "leaf": hanging_child})
    gateway = await chat(model, "queue")
    send(fake, "please delegate this", ago=300)  # within delivery.late_after: no note on its age
    await children_hanging(model)
    later = send(fake, "and what else?")
    event = f"{fake.bot_user['id']}:{later}"  # Telegram's event ids name the bot too
    await fake.wait_for(lambda: gateway.store.inbox.received_at("telegram", event) is not None)
    send(fake, "/stop", ago=200)
    await fake.wait_for(lambda: len(texts(fake)) == 2)
    await fake.wait_for(lambda: not fake.pending)
    await settled(gateway, timeout=10)
    assert texts(fake) == ["Stopped the running turn and 2 subagents. Their partial results are listed by /agents.",
                           "all done"]


async def test_a_new_sent_before_the_running_turns_message_starts_no_session_under_it(fake, chat):
    # It stopped the turn of the message sent after it, meant for the new session, unanswered.
    model = ScriptedModel({"parent": delegating_parent, "leaf": hanging_child})
    gateway = await chat(model)
    send(fake, "please delegate this")
    await children_hanging(model)
    session = next(iter(gateway.sessions))
    generation = session.generation
    send(fake, "/new", ago=3600)
    await fake.wait_for(lambda: texts(fake))
    assert texts(fake) == [NEW_SENT_BEFORE]
    release_children(model)
    await fake.wait_for(lambda: len(texts(fake)) == 2)
    await fake.wait_for(lambda: not fake.pending)
    await settled(gateway, timeout=10)
    assert texts(fake) == [NEW_SENT_BEFORE, "I started the subagents."]
    assert session.generation == generation


async def test_a_late_stop_leaves_the_subagents_of_a_later_message_whose_turn_has_ended_going(fake, chat):
    # The later message's turn delegated in the background and ended: the stop, sent before that
    # message, interrupted its subagent all the same, and the answer it was working on never came.
    model = ScriptedModel(finishing_script())
    gateway = await chat(model, background=True)
    send(fake, "go")
    await model.reached("dig")
    await fake.wait_for(lambda: texts(fake) == ["on it"])
    session = next(iter(gateway.sessions))
    await fake.wait_for(lambda: session.running is None)
    send(fake, "/stop", ago=3600)  # while the gateway was down
    await fake.wait_for(lambda: len(texts(fake)) == 2)
    assert texts(fake)[1] == stop_spared(1)
    assert len(gateway.host.children.children(session.session_id)) == 1
    model.release("dig")
    await fake.wait_for(lambda: len(texts(fake)) == 3)
    await settled(gateway, timeout=10)
    assert texts(fake) == ["on it", stop_spared(1), "here are the results"]


async def test_a_late_new_resets_no_session_that_answered_a_message_sent_after_it(fake, chat):
    # The later message was answered already: reset, the session forgot the exchange, and the
    # member's next message was answered as if it had never been.
    model = ScriptedModel({"parent": [[{"text": "Lisbon is sunny"}]]})
    gateway = await chat(model)
    send(fake, "what is the weather in Lisbon?")
    await fake.wait_for(lambda: texts(fake) == ["Lisbon is sunny"])
    await settled(gateway)
    session = next(iter(gateway.sessions))
    generation, transcript = session.generation, list(session.agent.messages)
    send(fake, "/new", ago=3600)
    await fake.wait_for(lambda: len(texts(fake)) == 2)
    await settled(gateway)
    assert texts(fake)[1] == new_sent_before_answered(1)
    assert (session.generation, session.agent.messages) == (generation, transcript)


async def test_a_late_stop_leaves_the_results_of_a_later_message_waiting_for_their_turn_to_come(fake, chat):
    # The later message's subagent has finished; its results wait behind the running turn of a message
    # sent later still. The stop, sent before both, dropped the results ("will not be delivered").
    model = ScriptedModel(finishing_script())
    gateway = await chat(model, "queue", background=True)
    send(fake, "go")
    await fake.wait_for(lambda: texts(fake) == ["on it"])
    send(fake, "and meanwhile?")
    await model.reached("thinking")
    session = next(iter(gateway.sessions))
    (digging,) = gateway.host.children.children(session.session_id)
    model.release("dig")  # its results wait for the running turn
    await gateway.host.children.wait_finished([digging.subagent_id])
    await fake.wait_for(lambda: any(item.kind == "completion" for item in session.queue))
    send(fake, "/stop", ago=3600)
    await fake.wait_for(lambda: len(texts(fake)) == 2)
    assert texts(fake)[1] == STOP_SENT_BEFORE
    model.release("thinking")
    await fake.wait_for(lambda: len(texts(fake)) == 4)
    await settled(gateway, timeout=10)
    assert texts(fake)[2:] == ["thought", "here are the results"]


async def test_a_late_stop_leaves_the_delivery_of_a_later_messages_results_going(fake, chat):
    # The results of the later message's subagent were being answered: stopped, they never came.
    script = finishing_script()
    parent = script["parent"]

    def slow_delivery(request):
        last = request.messages[-1]
        if last["role"] == "user" and str(last["content"]).startswith("[Background delegation results]"):
            return {"wait": "delivering", "text": "here are the results"}
        return parent(request)

    model = ScriptedModel({**script, "parent": slow_delivery})
    gateway = await chat(model, background=True)
    send(fake, "go")
    await fake.wait_for(lambda: texts(fake) == ["on it"])
    model.release("dig")
    await model.reached("delivering")
    send(fake, "/stop", ago=3600)
    await fake.wait_for(lambda: len(texts(fake)) == 2)
    assert texts(fake)[1] == STOP_SENT_BEFORE
    model.release("delivering")
    await fake.wait_for(lambda: len(texts(fake)) == 3)
    await settled(gateway, timeout=10)
    assert texts(fake)[2] == "here are the results"


async def test_a_late_new_counts_no_message_steered_into_the_turn_and_not_read_yet(fake, chat):
    # A message sent after the /new, steered into the running turn of one sent before it and not read
    # yet, was counted as answered: the /new was refused, and the message answered in the session it
    # was sent to leave. Unread, it goes to the new session, as one waiting in the queue does.
    model = ScriptedModel({"parent": delegating_parent, "leaf": hanging_child})
    gateway = await chat(model, "steer")
    send(fake, "please delegate this", ago=300)
    await children_hanging(model)
    session = next(iter(gateway.sessions))
    generation = session.generation
    send(fake, "and what else?")
    await fake.wait_for(lambda: session.running.steered)
    send(fake, "/new", ago=200)
    await fake.wait_for(lambda: len(texts(fake)) == 2)
    await fake.wait_for(lambda: not fake.pending)
    await settled(gateway, timeout=10)
    assert texts(fake) == ["Started a new session and ended 2 subagents. Delegation here is inline.", "all done"]
    assert session.generation == generation + 1
