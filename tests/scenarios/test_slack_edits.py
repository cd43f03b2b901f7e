"""A user edits or deletes a message on Slack: `FakeSlack` over Socket Mode, the real slack-bolt
client inside `SlackAdapter`, with the real `Gateway`.

The gateway takes a message as it was sent (docs/platforms/slack.md): an edit is never answered as
a message of its own, nor changes the text of one waiting for its turn or running; a deletion does
not take back one the gateway has received."""

from __future__ import annotations

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from tests.scenarios.test_slack_chat import DM, PLACEHOLDER, slack_chat  # noqa: F401  (the fixture)


def gated_echo() -> ScriptedModel:
    """Echoes each message; the one saying "first" waits at the gate ``first``."""
    def parent(request: ModelRequest) -> dict:
        text = str(request.messages[-1]["content"])
        return {"wait": "first", "text": f"re: {text}"} if text == "first" else {"text": f"re: {text}"}
    return ScriptedModel({"parent": parent})


async def test_edits_and_deletions_change_nothing_the_gateway_received(
        slack_chat):  # noqa: F811  (the fixture imported)
    model = gated_echo()
    chat = await slack_chat(llm=model, display={"busy_input_mode": "queue"})
    fake, gateway = chat.fake, chat.gateway

    def answers() -> list[str]:
        return [t for t in chat.bot_texts() if t != PLACEHOLDER]

    first = (await fake.push_dm("U1", "first"))["event"]["ts"]
    await model.reached("first")
    prod = (await fake.push_dm("U1", "deploy to prod"))["event"]["ts"]
    mistake = (await fake.push_dm("U1", "sent by mistake"))["event"]["ts"]
    await fake.wait_for(lambda: sum(item.event is not None for s in gateway.sessions for item in s.queue) == 2)
    await fake.push_edit(DM, first, "first, running")  # its turn running
    await fake.push_edit(DM, prod, "deploy to staging")  # waiting for its turn
    await fake.push_deletion(DM, mistake)  # waiting for its turn
    model.release("first")
    await fake.wait_for(lambda: len(answers()) == 3)
    await fake.push_edit(DM, first, "first, answered")  # answered already
    await fake.push_dm("U1", "last")
    await fake.wait_for(lambda: len(answers()) == 4)
    await settled(gateway)
    assert answers() == ["re: first", "re: deploy to prod", "re: sent by mistake", "re: last"]
