"""At a start, a Slack message that was steered into a running turn which then asked the chat a question (the
question waits: the turn's events unsettled) is deleted before the start queues it again. The model read it in the
asking turn, and the chat holds the question it led to: too late to drop, as for the asking message itself
(`gateway.message_edits`). The real slack-bolt client inside `SlackAdapter` against the loopback `FakeSlack` over
Socket Mode; a later platform's start held until the test lets it go on (`HeldStart`)."""

from __future__ import annotations

import asyncio

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from tests.scenarios.test_slack_deletions_waiting_elsewhere import deletion_acked, model_read
from tests.scenarios.test_start_replay_deletions import started_slack
from tests.scenarios.test_start_replay_edits import DM, EditsSeen, HeldStart


def steered_then_asking() -> ScriptedModel:
    """"hello" waits at the gate ``steer`` and calls a tool; told to deploy meanwhile (steered), it asks where."""
    def parent(request) -> dict:
        said = " ".join(str(m.get("content")) for m in request.messages)
        last = request.messages[-1]
        if last["role"] == "tool" and "Which environment?" not in said and "deploy" not in said:
            return {"text": "re: hello"}
        if "deploy" in said:
            if last["role"] == "tool" and "production" in str(last["content"]):
                return {"text": f"deploying to: {last['content']}"}
            return {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?",
                                                                       "choices": ["staging", "production"]}}]}
        if last["role"] == "user" and "hello" in str(last["content"]):
            return {"wait": "steer", "tool_calls": [{"name": "memory", "arguments": "{}"}]}
        return {"text": f"re: {last.get('content')}"}
    return ScriptedModel({"parent": parent})


async def test_a_message_steered_into_a_turn_that_asked_is_not_dropped_by_its_deletion_at_the_next_start(tmp_path):
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}}, display={"busy_input_mode": "steer"})
    async with FakeSlack() as fake:
        model = steered_then_asking()
        gateway = await start_gateway(config, [EditsSeen(fake)], model=model)
        try:
            await fake.push_dm("U1", "hello")
            await model.reached("steer")
            steered = (await fake.push_dm("U1", "please deploy the app"))["event"]["ts"]
            await fake.wait_for(lambda: gateway.sessions.get("slack", DM, None).running.steered)
            model.release("steer")
            await fake.wait_for(lambda: any("Which environment?" in t for t in fake.texts(DM)))
            await fake.wait_for(lambda: gateway.store.db.read(
                "SELECT 1 FROM gateway_outbox WHERE key LIKE '%:ask:%' AND status='sent'"))
        finally:
            await gateway.stop(grace=0)

        held, slack, model = HeldStart(), EditsSeen(fake), steered_then_asking()
        model.release("steer")
        gateway = Gateway(AgentHost(config, model=model), [slack, held])
        starting = asyncio.ensure_future(gateway.start())
        try:
            try:
                await started_slack(fake, gateway, slack)
                await fake.push_deletion(DM, steered)
                await deletion_acked(fake)
            finally:
                held.go.set()
            await asyncio.wait_for(starting, 10)
            await fake.push_dm("U1", "2")
            await fake.wait_for(lambda: any(t.startswith(("deploying", "re: ")) for t in fake.texts(DM)))
            await settled(gateway)
            texts = fake.texts(DM)
        finally:
            await gateway.stop(grace=0)
    assert any("deploying to: production" in t for t in texts), texts
    assert not any(t.startswith("re: ") for t in texts), texts
    assert model_read(model, "please deploy the app")
