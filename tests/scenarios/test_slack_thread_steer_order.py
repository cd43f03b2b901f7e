"""``busy_input_mode: steer`` in a Slack thread several members talk to the bot in, through the real
slack-bolt / slack-sdk `SlackAdapter` on the loopback `FakeSlack`, with the real `Gateway` behind it.

A member's follow-up steered into their own running turn, which ends before reading it, becomes a turn
of its own: it waits behind another member's message that came before it, so the thread's messages are
answered in the order sent."""

from __future__ import annotations

import re

from agent.models.scripted import ScriptedModel
from tests.scenarios.test_slack_chat import slack_chat  # noqa: F401  (the fixture)


def answering(request) -> dict:
    """U1's first question is held at a gate and answered without a second model call, so what was
    steered into its turn meanwhile is never read there; every other message is answered by name."""
    said = str(request.messages[-1]["content"])
    user, text = re.match(r"^\[user (U\w+)\] .*?(\w+)$", said).groups()
    return {"wait": "first", "text": f"{user}: {text}"} if text == "first" else {"text": f"{user}: {text}"}


def waiting(chat, ts: str, *texts: str) -> bool:
    """Whether the thread's messages ending in ``texts`` are each queued or steered into the running turn."""
    session = chat.session("C1", ts)
    running = session.running if session is not None else None
    items = [*session.queue, *(running.steered if running else ())] if session is not None else []
    return all(any(i.event is not None and i.event.text.endswith(text) for i in items) for text in texts)


async def test_a_steer_its_turn_never_read_is_answered_after_another_members_earlier_message(slack_chat):  # noqa: F811
    # U1's follow-up went to the front of the queue: answered before U2's question, sent before it.
    model = ScriptedModel({"parent": answering})
    chat = await slack_chat(script=None, llm=model, display={"busy_input_mode": "steer", "progress": "off"})
    ts = (await chat.fake.push_mention("C1", "U1", "first"))["event"]["ts"]
    await model.reached("first")
    await chat.fake.push_mention("C1", "U2", "second", thread_ts=ts)
    await chat.fake.wait_for(lambda: waiting(chat, ts, "second"))
    await chat.fake.push_mention("C1", "U1", "third", thread_ts=ts)
    await chat.fake.wait_for(lambda: waiting(chat, ts, "second", "third"))
    assert [i.event.text.split()[-1] for i in chat.session("C1", ts).running.steered] == ["third"]
    model.release("first")
    assert await chat.answered("C1", ts, count=3, timeout=15) == ["U1: first", "U2: second", "U1: third"]
    assert len(model.requests) == 3  # each answered once
