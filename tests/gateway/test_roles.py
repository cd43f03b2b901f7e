"""Orchestrator roles and stall phases through the real tool loop: the openai provider against a
fake server playing the parent, the orchestrator child and its own children."""

from __future__ import annotations

import json

from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.wire import (
    call,
    child_requests,
    delegate_parameters,
    goal,
    is_child,
    openai_model,
    parent_delegating,
    parent_requests,
    system_prompt,
    tool_names,
    tool_results,
)


def config(tmp_path, server, **delegation):
    return make_config(tmp_path, model=openai_model(server), delegation={"gateway_mode": "inline", **delegation})


async def run(chat: RecordingAdapter, gateway) -> None:
    await chat.say("go")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    await settled(gateway)


def by_goal(server) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for body in child_requests(server):
        out.setdefault(goal(body), []).append(body)
    return out


async def test_an_orchestrator_child_delegates_to_leaves_within_the_depth_limit(tmp_path, llm, gateways):
    server = await llm()

    def child(body):
        if goal(body) == "plan the trip":
            if body["messages"][-1]["role"] == "tool":
                return {"text": "trip planned: " + json.dumps(tool_results(body)[-1]["results"][0]["summary"])}
            return call("delegate_task", {"goal": "book the hotel", "role": "orchestrator"})
        return {"text": "hotel booked"}

    server.respond_with(parent_delegating({"goal": "plan the trip", "role": "orchestrator"}, children=child))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server, max_spawn_depth=2), [chat])
    await run(chat, gateway)
    requests = by_goal(server)
    planner, hotel = requests["plan the trip"][0], requests["book the hotel"][0]
    assert "delegate_task" in tool_names(planner)
    assert "you are at depth 1 of at most 2, so subagents you start must be leaves" in system_prompt(planner)
    assert "delegate_task" not in tool_names(hotel)  # depth 2 is the limit: a leaf, whatever it asked for
    (entry,) = tool_results(parent_requests(server)[-1])[0]["results"]
    assert entry["role"] == "orchestrator" and entry["summary"] == 'trip planned: "hotel booked"'
    parameters = delegate_parameters(parent_requests(server)[0])
    assert parameters["properties"]["role"]["enum"] == ["leaf", "orchestrator"]
    assert "nest at most 2 levels deep" in parameters["properties"]["role"]["description"]
    task_role = parameters["properties"]["tasks"]["anyOf"][0]["items"]["properties"]["role"]
    assert task_role["enum"] == ["leaf", "orchestrator"]


async def test_a_tasks_own_role_wins_over_the_top_level_one(tmp_path, llm, gateways):
    server = await llm()
    server.respond_with(parent_delegating({"role": "orchestrator", "tasks": [{"goal": "split it up"},
                                                                              {"goal": "do it", "role": "leaf"}]}))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server, max_spawn_depth=2), [chat])
    await run(chat, gateway)
    requests = by_goal(server)
    assert "delegate_task" in tool_names(requests["split it up"][0])
    assert "delegate_task" not in tool_names(requests["do it"][0])
    roles = [e["role"] for e in tool_results(parent_requests(server)[-1])[0]["results"]]
    assert roles == ["orchestrator", "leaf"]


async def test_at_the_depth_limit_an_orchestrator_is_a_leaf(tmp_path, llm, gateways):
    server = await llm()
    server.respond_with(parent_delegating({"goal": "split it up", "role": "orchestrator"}))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server), [chat])  # max_spawn_depth defaults to 1
    await run(chat, gateway)
    (child,) = child_requests(server)
    assert "delegate_task" not in tool_names(child)
    (entry,) = tool_results(parent_requests(server)[-1])[0]["results"]
    assert entry["role"] == "leaf"
    described = delegate_parameters(parent_requests(server)[0])["properties"]["role"]["description"]
    assert "every subagent runs as a leaf" in described


async def test_a_role_that_is_neither_is_a_tool_error_and_starts_nothing(tmp_path, llm, gateways):
    server = await llm()
    server.respond_with(parent_delegating({"tasks": [{"goal": "a"}, {"goal": "b", "role": "boss"}]}))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server), [chat])
    await run(chat, gateway)
    (error,) = tool_results(parent_requests(server)[-1])
    assert error == 'Error: task 1: `role` must be "leaf" or "orchestrator", got "boss"'
    assert child_requests(server) == []


async def test_a_child_stuck_in_its_first_model_call_times_out_before_its_first_llm_call(tmp_path, llm, gateways):
    server = await llm()
    server.respond_with(parent_delegating({"goal": "stall"}, children=lambda body: {"hang": True}))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server, stale_between_turns_seconds=0.3,
                                    heartbeat_interval_seconds=0.05), [chat])
    await run(chat, gateway)
    (entry,) = tool_results(parent_requests(server)[-1])[0]["results"]
    assert (entry["status"], entry["timeout_phase"], entry["api_calls"]) == ("timeout", "before_first_llm_call", 0)
    assert "after 0 API call(s)" in entry["error"]


async def test_a_child_stuck_after_a_model_call_counts_it_in_the_field_and_the_text(tmp_path, llm, gateways):
    server = await llm()

    def child(body):
        if body["messages"][-1]["role"] == "tool":
            return {"hang": True}
        return {"text": "checking", "tool_calls": [{"name": "no_such_tool", "arguments": "{}"}]}

    server.respond_with(parent_delegating({"goal": "stall later"}, children=child))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server, stale_between_turns_seconds=0.3,
                                    heartbeat_interval_seconds=0.05), [chat])
    await run(chat, gateway)
    (entry,) = tool_results(parent_requests(server)[-1])[0]["results"]
    assert (entry["status"], entry["timeout_phase"], entry["api_calls"]) == ("timeout", "after_llm_calls", 1)
    assert "after 1 API call(s)" in entry["error"] and entry["summary"] == "checking"
    assert is_child(child_requests(server)[-1])
