"""At a start, a Slack message whose turn had begun in the last process and waits for the answer to the question
it asked (idle: its event is unsettled, not marked begun) is deleted, or edited, before the start queues it again.
Its turn had begun: the model read it and the chat holds its question; as in a live process, it is too late to drop
or change it. The real slack-bolt client inside `SlackAdapter` against the loopback `FakeSlack` over Socket Mode."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from tests.scenarios.test_slack_deletions_waiting_elsewhere import deletion_acked, model_read
from tests.scenarios.test_start_replay_deletions import started_slack
from tests.scenarios.test_start_replay_edits import DM, EditsSeen, HeldStart


def asking() -> ScriptedModel:
    def parent(request) -> dict:
        last = request.messages[-1]
        if last["role"] == "tool":
            return {"text": f"deploying to: {last['content']}"}
        if "deploy" in str(last.get("content")):
            return {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?",
                                                                       "choices": ["staging", "production"]}}]}
        return {"text": f"re: {last.get('content')}"}
    return ScriptedModel({"parent": parent})


async def answered_after_restart(tmp_path, while_held: Callable[[FakeSlack, EditsSeen, str], Awaitable[None]],
                                 model: ScriptedModel) -> list[str]:
    """The chat's texts once "2" answered the question that "please deploy the app" asked before a stop, and
    ``while_held(fake, slack, ts of the asking message)`` ran after Slack started, before the start replayed."""
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
    async with FakeSlack() as fake:
        gateway = await start_gateway(config, [EditsSeen(fake)], model=asking())
        try:
            asked = (await fake.push_dm("U1", "please deploy the app"))["event"]["ts"]
            await fake.wait_for(lambda: any("Which environment?" in t for t in fake.texts(DM)))
            await fake.wait_for(lambda: gateway.store.db.read(
                "SELECT 1 FROM gateway_outbox WHERE key LIKE '%:ask:%' AND status='sent'"))
        finally:
            await gateway.stop(grace=0)

        held, slack = HeldStart(), EditsSeen(fake)
        gateway = Gateway(AgentHost(config, model=model), [slack, held])
        starting = asyncio.ensure_future(gateway.start())
        try:
            try:
                await started_slack(fake, gateway, slack)
                await while_held(fake, slack, asked)
            finally:
                held.go.set()
            await asyncio.wait_for(starting, 10)
            await fake.push_dm("U1", "2")
            await fake.wait_for(lambda: any(t.startswith(("deploying", "re: ")) for t in fake.texts(DM)))
            await settled(gateway)
            return fake.texts(DM)
        finally:
            await gateway.stop(grace=0)


async def test_a_replayed_message_whose_turn_asked_a_question_is_not_dropped_by_its_deletion(tmp_path):
    async def deleted(fake: FakeSlack, slack: EditsSeen, asked: str) -> None:
        await fake.push_deletion(DM, asked)
        await deletion_acked(fake)

    texts = await answered_after_restart(tmp_path, deleted, asking())
    assert any("deploying to: production" in t for t in texts), texts
    assert not any(t.startswith("re: ") for t in texts), texts


async def test_a_replayed_message_whose_turn_asked_a_question_is_not_changed_by_its_edit(tmp_path):
    async def edited(fake: FakeSlack, slack: EditsSeen, asked: str) -> None:
        await fake.push_edit(DM, asked, "please deploy the billing service")
        await asyncio.wait_for(slack.edit_handed.wait(), 5)

    model = asking()
    texts = await answered_after_restart(tmp_path, edited, model)
    assert any("deploying to: production" in t for t in texts), texts
    assert not model_read(model, "billing")  # the turn run again reads what the question was asked about
