"""At a start, a Slack message whose turn had asked the chat a question and answered it (the answer in the chat, its
end owed: the store refused its settling) is queued again behind a completion turn the start resumes first (the
process died in it). Its user deletes it while it waits there: too late, as before it is queued again
(`gateway.message_edits`): its turn runs again quietly, its transcript kept, and no answer of it comes twice. The real
slack-bolt client inside `SlackAdapter` against the loopback `FakeSlack` over Socket Mode."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from tests.gateway.ledger_restarts import RESULTS
from tests.gateway.test_dead_letters import execute, killed_now
from tests.gateway.test_refused_end_marks import REFUSE_SETTLE
from tests.scenarios.test_slack_deletions_waiting_elsewhere import deletion_acked
from tests.scenarios.test_start_replay_edits import DM, EditsSeen


def delegating_and_asking() -> ScriptedModel:
    """Delegates on "please delegate"; asks where to deploy on "please deploy the app", and says where once told
    (held at ``deploy``); answers results held at ``completion``."""
    def parent(request) -> dict:
        last = request.messages[-1]
        said = str(last.get("content"))
        if last["role"] == "user" and said.startswith(RESULTS):
            return {"wait": "completion", "text": "results"}
        if last["role"] == "user" and "delegate" in said:
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "dig"}}]}
        if last["role"] == "user" and "deploy" in said:
            return {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?",
                                                                       "choices": ["staging", "production"]}}]}
        if last["role"] == "tool" and "production" in said:
            return {"wait": "deploy", "text": f"deploying to: {said}"}
        if last["role"] == "tool":
            return {"text": "on it"}
        return {"text": f"re: {said}"}
    return ScriptedModel({"parent": parent, "leaf": lambda request: {"wait": "leaf", "text": "found it"}})


def deployed(fake: FakeSlack) -> list[str]:
    return [text for text in fake.texts(DM) if text.startswith("deploying to:")]


async def test_an_answered_message_queued_behind_a_resumed_completion_turn_is_not_dropped_by_its_deletion(tmp_path):
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}},
                         display={"busy_input_mode": "queue", "interim_assistant_messages": True})
    async with FakeSlack() as fake:
        model = delegating_and_asking()
        gateway = await start_gateway(config, [EditsSeen(fake)], model=model)
        try:
            await fake.push_dm("U1", "please delegate")
            await fake.wait_for(lambda: "on it" in fake.texts(DM))
            asked = (await fake.push_dm("U1", "please deploy the app"))["event"]["ts"]
            await fake.wait_for(lambda: any("Which environment?" in t for t in fake.texts(DM)))
            await fake.push_dm("U1", "2")
            await model.reached("deploy")
            gateway.store.db.write(REFUSE_SETTLE["message"])  # its end is owed, its answer journaled
            model.release("deploy")
            await fake.wait_for(lambda: deployed(fake))
            model.release("leaf")
            await model.reached("completion")  # the results' turn runs: the process dies in it
            await gateway.store.durable()
            restore = killed_now(tmp_path)
        finally:
            await gateway.stop(grace=0)
        restore()
        execute(tmp_path, "DROP TRIGGER refuse")

        model = delegating_and_asking()
        gateway = await start_gateway(config, [EditsSeen(fake)], model=model)
        try:
            await model.reached("completion")  # run again first: the message waits behind it

            def queued() -> bool:
                session = gateway.sessions.find("slack", DM, None)
                return session is not None and any(item.event is not None and item.event.message_id == asked
                                                   for item in session.queue)

            await fake.wait_for(queued)
            await fake.push_deletion(DM, asked)
            await deletion_acked(fake)
            assert not gateway.store.inbox.settled("slack", f"{DM}:{asked}") and queued()
            model.release("completion")
            await fake.wait_for(lambda: gateway.store.inbox.settled("slack", f"{DM}:{asked}"))
            await settled(gateway)
            history = [str(m.get("content")) for m in gateway.sessions.find("slack", DM, None).agent.messages]
        finally:
            await gateway.stop(grace=0)
    assert len(deployed(fake)) == 1 and not any(t.startswith("re: ") for t in fake.texts(DM)), fake.texts(DM)
    assert any("please deploy the app" in said for said in history)  # its turn kept in the session
