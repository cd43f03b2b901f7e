"""The backlog guard: a chat with more than 25 undelivered background results is warned, and a
background delegation that would take it above 50 is refused before anything starts — driven
by a parent (the openai provider against a fake server) that keeps delegating in one turn."""

from __future__ import annotations

from gateway.backlog import BACKLOG_LIMIT, BACKLOG_WARN
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.wire import call, is_child, openai_model, parent_requests, tool_results


def delegating(times: int):
    """The parent calls delegate_task ``times`` times in one turn, one task each; children hang."""

    def play(body: dict) -> dict:
        if is_child(body):
            return {"hang": True}
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        if done < times:
            return call("delegate_task", {"goal": f"job number {done + 1}"})
        return {"text": f"dispatched {times}"}

    return play


async def test_a_chat_is_warned_above_25_and_refused_above_50_undelivered_results(tmp_path, llm, gateways):
    server = await llm()
    server.respond_with(delegating(BACKLOG_LIMIT + 1))
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server), agent={"max_iterations": 60}), [chat])
    await chat.say("delegate a lot")
    await chat.wait_for(lambda: "reply" in chat.kinds(), timeout=30)
    results = tool_results(parent_requests(server)[-1])
    assert [r["status"] for r in results[:BACKLOG_LIMIT]] == ["dispatched"] * BACKLOG_LIMIT
    assert all("backlog" not in r for r in results[:BACKLOG_WARN])
    assert results[BACKLOG_WARN]["backlog"].startswith("This chat has 26 background results waiting to be delivered")
    assert "above 50 new background work is refused" in results[BACKLOG_LIMIT - 1]["backlog"]
    refused = results[BACKLOG_LIMIT]
    assert refused.startswith("Error: Refused, no subagent was started: this chat already has 50 background results")
    session = next(iter(gateway.sessions))
    assert gateway.store.delegations.count_unsettled(session.key) == BACKLOG_LIMIT
    assert not any("job number 51" in c.goal for c in gateway.host.children.children(session.session_id))
    warnings = [t for t in chat.texts("completion") if t.startswith("⚠️")]
    assert warnings == ["⚠️ 26 background results are waiting to be delivered in this chat. New background work is "
                        "refused once 50 are waiting; /agents lists them, /stop drops them."]

    # Once the backlog is settled (here by /stop), new background work is accepted again.
    server.respond_with(lambda body: None if is_child(body) else (
        {"text": "one more started"} if body["messages"][-1]["role"] == "tool" else call("delegate_task", {"goal": "x"})))
    await chat.say("/stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    assert gateway.store.delegations.count_unsettled(session.key) == 0
    await chat.say("one more")
    await chat.wait_for(lambda: len(chat.texts("reply")) == 2)
    result = tool_results(parent_requests(server)[-1])[-1]
    assert result["status"] == "dispatched" and "backlog" not in result
    await chat.say("/stop")
    await settled(gateway)
