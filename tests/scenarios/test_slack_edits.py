"""A user edits or deletes a message on Slack: `FakeSlack` over Socket Mode or HTTP, the real slack-bolt
client inside `SlackAdapter`, with the real `Gateway` (`gateway.message_edits`).

An edit (``message_changed``) of a message still waiting for its turn is what that turn answers
(docs/platforms/slack.md); an edit is never answered as a message of its own, nor changes the text of a
message running or answered, and a link's preview (also ``message_changed``) changes nothing. A deletion
(``message_deleted``) of a message still waiting for its turn drops it: never answered, its text kept nowhere."""

from __future__ import annotations

import re

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.testing import settled
from platforms.fakes.slack import FakeSlack
from tests.scenarios.test_slack_chat import DM, PLACEHOLDER, slack_chat  # noqa: F401  (the fixture)

BOT = "<@UBOT>"


def gated_echo() -> ScriptedModel:
    """Echoes each message without its sender; the one saying "first" waits at the gate ``first``."""
    def parent(request: ModelRequest) -> dict:
        text = re.sub(r"^\[user U\w+\] ", "", str(request.messages[-1]["content"]))
        return {"wait": "first", "text": f"re: {text}"} if text == "first" else {"text": f"re: {text}"}
    return ScriptedModel({"parent": parent})


def waiting(gateway: Gateway) -> int:
    return sum(item.event is not None for s in gateway.sessions for item in s.queue)


async def acked(fake: FakeSlack) -> None:
    """Every event pushed over Socket Mode so far has been acked: the adapter has handed it over. (Over HTTP
    a push returns once answered.)"""
    await fake.wait_for(lambda: all(e.acked for e in fake.envelopes.values()))


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_an_edit_changes_only_a_message_waiting_for_its_turn(slack_chat, mode):  # noqa: F811
    model = gated_echo()
    chat = await slack_chat(mode=mode, llm=model, display={"busy_input_mode": "queue"})
    fake, gateway = chat.fake, chat.gateway

    def answers() -> list[str]:
        return [t for t in chat.bot_texts() if t != PLACEHOLDER]

    first = (await fake.push_dm("U1", "first"))["event"]["ts"]
    await model.reached("first")
    prod = (await fake.push_dm("U1", "deploy to prod"))["event"]["ts"]
    mistake = (await fake.push_dm("U1", "sent by mistake"))["event"]["ts"]
    await fake.wait_for(lambda: waiting(gateway) == 2)
    await fake.push_edit(DM, first, "first, running")  # its turn running: left as it is
    await fake.push_edit(DM, prod, "deploy to staging")  # waiting for its turn
    await fake.push_unfurl(DM, prod, fake.shared_message("C2", "U2", "an old plan", author="bob"))  # no edit
    await fake.push_deletion(DM, mistake)  # waiting for its turn: dropped
    await acked(fake)
    assert waiting(gateway) == 1
    model.release("first")
    await fake.wait_for(lambda: len(answers()) == 2)
    await fake.push_edit(DM, first, "first, answered")  # answered already: no turn of its own
    await fake.push_edit(DM, prod, "deploy to dev")
    await fake.push_dm("U1", "last")
    await fake.wait_for(lambda: len(answers()) == 3)
    await settled(gateway)
    assert answers() == ["re: first", "re: deploy to staging", "re: last"]
    assert not any("sent by mistake" in str(m) for request in model.requests for m in request.messages)
    # Settled (not replayed after a restart) without its text.
    assert gateway.store.inbox.settled("slack", f"{DM}:{mistake}")
    assert not any("sent by mistake" in str(row) for row in gateway.store.db.read("SELECT payload FROM gateway_inbox"))


async def test_a_waiting_threads_parent_deleted_as_a_tombstone_is_not_answered(slack_chat):  # noqa: F811
    model = gated_echo()
    chat = await slack_chat(llm=model, display={"busy_input_mode": "queue"})
    fake, gateway = chat.fake, chat.gateway
    await fake.push_dm("U1", "first")
    await model.reached("first")
    pasted = (await fake.push_dm("U1", "my password is hunter2"))["event"]["ts"]
    await fake.wait_for(lambda: waiting(gateway) == 1)
    await fake.push_message(DM, "U1", "oops", thread_ts=pasted, channel_type="im")  # a reply makes it a parent
    await fake.wait_for(lambda: waiting(gateway) == 2)
    await fake.push_deletion(DM, pasted)  # kept as a tombstone for its reply: ``message_changed``
    await acked(fake)
    assert waiting(gateway) == 1
    model.release("first")
    await fake.wait_for(lambda: len([t for t in chat.bot_texts() if t != PLACEHOLDER]) == 2)
    await settled(gateway)
    assert [t for t in chat.bot_texts() if t != PLACEHOLDER] == ["re: first", "re: oops"]
    assert not any("hunter2" in str(m) for request in model.requests for m in request.messages)


async def test_in_a_thread_another_members_waiting_message_is_answered_as_edited(slack_chat):  # noqa: F811
    model = gated_echo()
    chat = await slack_chat(llm=model)
    fake, gateway = chat.fake, chat.gateway
    thread = (await fake.push_mention("C1", "U1", "first"))["event"]["ts"]
    await model.reached("first")
    carols = (await fake.push_mention("C1", "U2", "who is on call tonight?", thread_ts=thread))["event"]["ts"]
    await fake.wait_for(lambda: waiting(gateway) == 1)  # another member's message waits, whatever the busy mode
    await fake.push_edit("C1", carols, f"{BOT} who is on call tomorrow?")  # read as a message: the mention goes
    await fake.push_edit("C1", thread, f"{BOT} first, running")  # the thread's first message, running
    await acked(fake)
    model.release("first")
    await chat.answered("C1", thread, count=2)
    assert [t for t in chat.bot_texts("C1", thread) if t != PLACEHOLDER] == [
        "re: first", "re: who is on call tomorrow?"]
