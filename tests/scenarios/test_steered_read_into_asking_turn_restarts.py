"""A Slack message steered into a running turn whose model read it and then asked the chat a question is marked as
read within that turn (`gateway.questions.Questions._read_within`). After deaths (SIGKILL: what was committed), the
message is read exactly once: not lost, not answered twice, also when the asking turn's own message is set aside as a
dead letter. The real slack-bolt client inside `SlackAdapter` against the loopback `FakeSlack` over Socket Mode."""

from __future__ import annotations

import asyncio

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from tests.gateway.test_dead_letters import killed_now
from tests.scenarios.test_slack_deletions_waiting_elsewhere import deletion_acked, model_read, stored_anywhere
from tests.scenarios.test_start_replay_deletions import SECRET, started_slack
from tests.scenarios.test_start_replay_edits import DM, EditsSeen, HeldStart


def steered_then_asking(*, gated: bool) -> ScriptedModel:
    """"hello" waits at ``steer`` (if ``gated``) and calls a tool; told to deploy meanwhile (steered), it asks
    where, and once told waits at ``deploy`` before it says where."""
    def parent(request) -> dict:
        said = " ".join(str(m.get("content")) for m in request.messages)
        last = request.messages[-1]
        if "deploy" in said:
            if last["role"] == "tool" and "production" in str(last["content"]):
                return {"wait": "deploy", "text": f"deploying to: {last['content']}"}
            return {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?",
                                                                       "choices": ["staging", "production"]}}]}
        if last["role"] == "tool":
            return {"text": "re: hello"}
        if last["role"] == "user" and "hello" in str(last["content"]):
            calls = [{"name": "memory", "arguments": "{}"}]
            return {"wait": "steer", "tool_calls": calls} if gated else {"tool_calls": calls}
        return {"text": f"re: {last.get('content')}"}
    return ScriptedModel({"parent": parent})


async def test_a_read_steered_message_is_answered_when_its_asking_turns_message_is_set_aside(tmp_path):
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}}, display={"busy_input_mode": "steer"},
                         inbox={"max_attempts": 2})
    async with FakeSlack() as fake:
        # The first run of "hello" dies: one attempt charged to it.
        model = steered_then_asking(gated=True)
        gateway = await start_gateway(config, [EditsSeen(fake)], model=model)
        try:
            await fake.push_dm("U1", "hello")
            await model.reached("steer")
            await gateway.store.durable()
            restore = killed_now(tmp_path)
        finally:
            await gateway.stop(grace=0)
        restore()

        # Run again, "please deploy" is steered in and read, the question asked and answered; it dies going on.
        model = steered_then_asking(gated=True)
        gateway = await start_gateway(config, [EditsSeen(fake)], model=model)
        try:
            await model.reached("steer")
            await fake.push_dm("U1", "please deploy the app")
            await fake.wait_for(lambda: gateway.sessions.get("slack", DM, None).running.steered)
            model.release("steer")
            await fake.wait_for(lambda: any("Which environment?" in t for t in fake.texts(DM)))
            await fake.push_dm("U1", "2")
            await model.reached("deploy")
            await gateway.store.durable()
            restore = killed_now(tmp_path)
        finally:
            await gateway.stop(grace=0)
        restore()

        # "hello" dies a second time: set aside. "please deploy the app" is still owed its answer.
        model = steered_then_asking(gated=False)
        model.release("deploy")
        gateway = await start_gateway(config, [EditsSeen(fake)], model=model)
        try:
            await fake.wait_for(lambda: len([t for t in fake.texts(DM) if "Which environment?" in t]) == 2
                                or any(t.startswith("deploying") for t in fake.texts(DM)), timeout=10)
            if not any(t.startswith("deploying") for t in fake.texts(DM)):
                await fake.push_dm("U1", "2")
            await fake.wait_for(lambda: any(t.startswith("deploying") for t in fake.texts(DM)), timeout=10)
            await settled(gateway)
            texts = fake.texts(DM)
        finally:
            await gateway.stop(grace=0)
    assert len([t for t in texts if t.startswith("deploying to: production")]) == 1, texts


def asking_beside_a_tool(*, gated: bool) -> ScriptedModel:
    """"hello" waits at ``steer`` (if ``gated``) and answers with two calls at once: a tool, then a question."""
    def parent(request) -> dict:
        if not any(m["role"] == "tool" for m in request.messages):
            calls = [{"name": "memory", "arguments": "{}"},
                     {"name": "clarify", "arguments": {"question": "Which environment?",
                                                       "choices": ["staging", "production"]}}]
            return {"wait": "steer", "tool_calls": calls} if gated else {"tool_calls": calls}
        return {"text": "done"}
    return ScriptedModel({"parent": parent})


async def test_a_message_steered_in_after_the_model_last_read_is_dropped_by_its_deletion_at_the_next_start(tmp_path):
    # Steered in while the model wrote its calls, it rides on the first call's result, which no model call has read
    # when the second call asks: the question cannot be about it, and it was never the turn's. Deleted before the
    # next start queues it again, it is dropped, as any message waiting for its turn is.
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}}, display={"busy_input_mode": "steer"})
    async with FakeSlack() as fake:
        model = asking_beside_a_tool(gated=True)
        gateway = await start_gateway(config, [EditsSeen(fake)], model=model)
        try:
            await fake.push_dm("U1", "hello")
            await model.reached("steer")
            pasted = (await fake.push_dm("U1", SECRET))["event"]["ts"]
            await fake.wait_for(lambda: gateway.sessions.get("slack", DM, None).running.steered)
            model.release("steer")
            await fake.wait_for(lambda: gateway.store.db.read(
                "SELECT 1 FROM gateway_outbox WHERE key LIKE '%:ask:%' AND status='sent'"))
            assert len(model.requests) == 1  # no model call read it before the question
        finally:
            await gateway.stop(grace=0)

        held, slack, model = HeldStart(), EditsSeen(fake), asking_beside_a_tool(gated=False)
        gateway = Gateway(AgentHost(config, model=model), [slack, held])
        starting = asyncio.ensure_future(gateway.start())
        try:
            try:
                await started_slack(fake, gateway, slack)
                await fake.push_deletion(DM, pasted)
                await deletion_acked(fake)
            finally:
                held.go.set()
            await asyncio.wait_for(starting, 10)
            dropped = gateway.store.inbox.settled("slack", f"{DM}:{pasted}")
            await fake.push_dm("U1", "2")
            await fake.wait_for(lambda: "done" in fake.texts(DM))
            await settled(gateway)
            kept = stored_anywhere(gateway, "hunter2")
        finally:
            await gateway.stop(grace=0)
    assert dropped and not kept
    assert not model_read(model, "hunter2")
