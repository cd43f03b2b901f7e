"""Delegation backends through the real tool loop: the openai provider against fake servers
playing the parent, its default children, and each route's model."""

from __future__ import annotations

import json
import logging

import pytest

from gateway.errors import StartupError
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.wire import (
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

FAST_KEY = "sk-fast-route-secret-1234"
PARENT_KEY = "sk-parent-secret-5678"


def model_map(fast, deep=None) -> dict:
    options = {"fast": {"description": "Quick and cheap; for lookups.", "provider": "openai", "model": "fast-model",
                        "base_url": fast.base_url, "api_key": FAST_KEY}}
    if deep is not None:
        options["deep"] = {"description": "Careful reasoning; slower.", "provider": "openai", "model": "deep-model",
                           "base_url": deep.base_url}
    return options


def routed_config(tmp_path, main, fast, deep=None, *, backend="model_map", mode="inline", **delegation):
    return make_config(
        tmp_path, model=openai_model(main, api_key=PARENT_KEY), plugins=["advanced_delegation"],
        delegation={"gateway_mode": mode, "backend": backend, "model_map": model_map(fast, deep), **delegation},
    )


def answering(label: str):
    return lambda body: {"text": f"{label} did {goal(body)}"} if is_child(body) else None


async def test_model_map_routes_each_task_and_the_model_sees_only_names_and_descriptions(
        tmp_path, llm, gateways, caplog):
    caplog.set_level(logging.DEBUG)
    main, fast, deep = await llm(api_key=PARENT_KEY), await llm(api_key=FAST_KEY), await llm()
    tasks = {"tasks": [{"goal": "look up the capital", "route": "fast"}, {"goal": "prove the lemma", "route": "deep"},
                       {"goal": "summarise the notes"}]}
    main.respond_with(parent_delegating(tasks, final="here is everything",
                                        children=lambda b: {"text": f"default did {goal(b)}"}))
    fast.respond_with(answering("fast"))
    deep.respond_with(answering("deep"))
    chat = RecordingAdapter()
    gateway = await gateways(routed_config(tmp_path, main, fast, deep), [chat])
    await chat.say("research this")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    assert chat.texts("reply") == ["here is everything"]

    # Each route's model ran its task, on its own server with its own key (the fake refuses others).
    assert [(b["model"], goal(b)) for b in fast.requests] == [("fast-model", "look up the capital")]
    assert [(b["model"], goal(b)) for b in deep.requests] == [("deep-model", "prove the lemma")]
    assert [(b["model"], goal(b)) for b in child_requests(main)] == [("parent-model", "summarise the notes")]

    first, second = parent_requests(main)
    schema = delegate_parameters(first)
    route = schema["properties"]["tasks"]["anyOf"][0]["items"]["properties"]["route"]
    assert route["enum"] == ["fast", "deep"]
    assert "Quick and cheap; for lookups." in route["description"] and "Careful reasoning" in route["description"]
    (results,) = tool_results(second)
    by_task = {e["task_index"]: e for e in results["results"]}
    assert by_task[0]["route"] == {"name": "fast"} and by_task[0]["summary"] == "fast did look up the capital"
    assert by_task[1]["route"] == {"name": "deep"} and by_task[1]["model"] is None
    assert "route" not in by_task[2] and by_task[2]["summary"] == "default did summarise the notes"
    # Providers, models, endpoints and keys never reach the parent model, nor the logs.
    seen = json.dumps(parent_requests(main))
    for hidden in ("fast-model", "deep-model", fast.base_url, deep.base_url, FAST_KEY):
        assert hidden not in seen
    assert FAST_KEY not in caplog.text and PARENT_KEY not in caplog.text
    await settled(gateway)


async def test_a_route_on_another_server_never_gets_the_parents_key(tmp_path, llm, gateways, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    main, deep = await llm(api_key=PARENT_KEY), await llm()
    deep.respond_with(lambda body: {"text": "deep answer"})
    main.respond_with(parent_delegating({"tasks": [{"goal": "think hard", "route": "deep"},
                                                   {"goal": "here too", "route": "same"}]},
                                        children=lambda b: {"text": "same server"}))
    chat = RecordingAdapter()
    config = make_config(tmp_path, model=openai_model(main, api_key=PARENT_KEY), plugins=["advanced_delegation"],
                         delegation={"gateway_mode": "inline", "backend": "model_map", "model_map": {
                             "deep": {"description": "d", "provider": "openai", "model": "deep-model",
                                      "base_url": deep.base_url},
                             "same": {"description": "s", "provider": "openai", "model": "same-model"}}})
    gateway = await gateways(config, [chat])
    await chat.say("go")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    assert deep.authorizations == ["Bearer not-set"]  # its own key (none): not the parent's
    (child,) = child_requests(main)  # no base_url: the parent's server, so the parent's key
    assert child["model"] == "same-model" and main.authorizations[main.requests.index(child)] == f"Bearer {PARENT_KEY}"
    await settled(gateway)


async def test_a_task_whose_route_does_not_resolve_is_refused_while_the_rest_run(tmp_path, llm, gateways):
    main, fast = await llm(api_key=PARENT_KEY), await llm(api_key=FAST_KEY)
    main.respond_with(parent_delegating({"tasks": [{"goal": "use the moon route", "route": "moon"},
                                                   {"goal": "quick look", "route": "fast"}]}))
    fast.respond_with(answering("fast"))
    chat = RecordingAdapter()
    gateway = await gateways(routed_config(tmp_path, main, fast), [chat])
    await chat.say("go")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    refused, ran = tool_results(parent_requests(main)[-1])[0]["results"]
    assert refused["status"] == "error" and refused["subagent_id"] is None
    assert refused["route"]["refused"] is True and "moon" in refused["route"]["reason"]
    assert "fast" in refused["route"]["reason"]  # names the routes there are
    assert ran["status"] == "completed" and ran["summary"] == "fast did quick look"
    assert [goal(b) for b in fast.requests] == ["quick look"]
    assert child_requests(main) == []
    await settled(gateway)


async def test_a_backend_gone_at_run_time_fails_the_call_and_starts_no_child(tmp_path, llm, gateways):
    main, fast = await llm(api_key=PARENT_KEY), await llm(api_key=FAST_KEY)
    delegating = parent_delegating({"tasks": [{"goal": "a", "route": "fast"}, {"goal": "b"}]})
    main.respond_with(lambda body: {"text": "hi"} if body["messages"][-1]["content"] == "hello" else delegating(body))
    chat = RecordingAdapter()
    gateway = await gateways(routed_config(tmp_path, main, fast), [chat])
    await chat.say("hello")  # the session exists, with the model_map tool
    await chat.wait_for(lambda: "reply" in chat.kinds())
    gateway.host.routing.unregister("model_map")
    await chat.say("delegate now")
    await chat.wait_for(lambda: len(chat.texts("reply")) == 2)
    error = tool_results(parent_requests(main)[-1])[-1]
    assert error.startswith("Error: No subagent was started") and "'model_map' is not available" in error
    assert len(fast.requests) == 0 and len(child_requests(main)) == 0
    assert not gateway.host.children.recent(next(iter(gateway.sessions)).session_id)
    await settled(gateway)


async def test_tasks_without_a_route_and_sessions_on_the_default_backend_use_the_default_child_model(
        tmp_path, llm, gateways):
    main, fast = await llm(api_key=PARENT_KEY), await llm(api_key=FAST_KEY)
    main.respond_with(parent_delegating({"goal": "plain work", "route": "fast"}))
    chat = RecordingAdapter()
    gateway = await gateways(routed_config(tmp_path, main, fast, backend="default"), [chat])
    await chat.say("go")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    first, second = parent_requests(main)
    assert "route" not in json.dumps(delegate_parameters(first))  # the default backend offers no routes
    (entry,) = tool_results(second)[0]["results"]
    assert entry["route"]["refused"] is True and "has no routes" in entry["route"]["reason"]
    assert fast.requests == []
    await settled(gateway)


async def test_profile_routes_run_a_child_as_its_profile(tmp_path, llm, gateways):
    main, reviewer = await llm(api_key=PARENT_KEY), await llm(api_key="sk-reviewer-9999")
    (tmp_path / "checklist.md").write_text("1. Look for off-by-one errors.\n", encoding="utf-8")
    main.respond_with(parent_delegating({"tasks": [{"goal": "review the patch", "route": "reviewer"},
                                                   {"goal": "plain task"}]}))
    reviewer.respond_with(lambda body: {"text": "LGTM"})
    chat = RecordingAdapter()
    config = make_config(
        tmp_path, model=openai_model(main, api_key=PARENT_KEY), plugins=["advanced_delegation"],
        agent={"toolsets": ["file", "execute_code"]},
        delegation={"gateway_mode": "inline", "backend": "profile_routes", "profile_routes": {
            "reviewer": {"description": "Reviews code changes.", "provider": "openai", "model": "review-model",
                         "base_url": reviewer.base_url, "api_key": "sk-reviewer-9999",
                         "system_prompt": "You are Rhea, a meticulous code reviewer.",
                         "context_files": [str(tmp_path / "checklist.md")], "toolsets": ["file"]}}},
    )
    gateway = await gateways(config, [chat])
    await chat.say("go")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    (review,) = reviewer.requests
    prompt = system_prompt(review)
    assert review["model"] == "review-model"
    assert prompt.startswith("You are Rhea, a meticulous code reviewer.")
    assert "Look for off-by-one errors." in prompt and "YOUR TASK:\nreview the patch" in prompt
    # toolsets narrowed to file
    assert set(tool_names(review)) == {"read_file", "list_files", "write_file"}  # no send_file: children never reach the chat
    (plain,) = child_requests(main)
    assert "execute_code" in tool_names(plain) and not system_prompt(plain).startswith("You are Rhea")
    entries = tool_results(parent_requests(main)[-1])[0]["results"]
    assert entries[0]["route"] == {"name": "reviewer"} and entries[0]["summary"] == "LGTM"
    assert "review-model" not in json.dumps(parent_requests(main))
    await settled(gateway)


async def test_background_results_name_the_route_not_the_model(tmp_path, llm, gateways):
    main, fast = await llm(api_key=PARENT_KEY), await llm(api_key=FAST_KEY)
    fast.respond_with(answering("fast"))

    def parent(body):
        if is_child(body):
            return None
        last = body["messages"][-1]
        if last["role"] == "tool":
            return {"text": "started"}
        if "Background delegation results" in str(last["content"]):
            return {"text": "the results are in"}
        return {"tool_calls": [{"name": "delegate_task", "arguments": json.dumps({"goal": "g", "route": "fast"})}]}

    main.respond_with(parent)
    chat = RecordingAdapter()
    gateway = await gateways(routed_config(tmp_path, main, fast, mode="background"), [chat])
    await chat.say("go")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await settled(gateway)
    delivered = [b for b in parent_requests(main) if "Background delegation results" in str(b["messages"][-1])]
    text = delivered[0]["messages"][-1]["content"]
    payload = json.loads(text[text.index("{"):])
    (entry,) = payload["results"]
    assert entry["route"] == {"name": "fast"} and entry["model"] is None and entry["summary"] == "fast did g"
    assert "fast-model" not in text


async def test_a_configured_backend_that_fails_to_load_stops_the_start(tmp_path, llm, gateways):
    main = await llm()
    skills = tmp_path / "skills.md"
    skills.write_text("how to review", encoding="utf-8")
    config = make_config(tmp_path, model=openai_model(main), plugins=["advanced_delegation"],
                         delegation={"backend": "profile_routes", "profile_routes": {
                             "reviewer": {"description": "d", "context_files": [str(skills)]}}})
    handlers = list(logging.getLogger().handlers)
    skills.unlink()  # gone between the config check and the start
    with pytest.raises(StartupError, match=r"delegation\.backend: 'profile_routes' is not available .*"
                                           r"delegation\.profile_routes\.reviewer\.context_files\[0\]: cannot read"):
        await gateways(config, [RecordingAdapter()])
    assert logging.getLogger().handlers == handlers  # the failed start was stopped: nothing of it logs on


async def test_an_orchestrator_child_routes_its_own_tasks_through_its_sessions_backend(tmp_path, llm, gateways):
    main, fast = await llm(api_key=PARENT_KEY), await llm(api_key=FAST_KEY)
    fast.respond_with(answering("fast"))

    def child(body):
        if body["messages"][-1]["role"] == "tool":
            return {"text": "delegated: " + tool_results(body)[-1]["results"][0]["summary"]}
        return {"tool_calls": [{"name": "delegate_task",
                                "arguments": json.dumps({"goal": "leaf work", "route": "fast"})}]}

    main.respond_with(parent_delegating({"goal": "coordinate", "role": "orchestrator"}, children=child))
    chat = RecordingAdapter()
    gateway = await gateways(routed_config(tmp_path, main, fast, max_spawn_depth=2), [chat])
    await chat.say("go")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    (orchestrator,) = child_requests(main)[:1]
    assert delegate_parameters(orchestrator)["properties"]["route"]["enum"] == ["fast"]
    assert [goal(b) for b in fast.requests] == ["leaf work"]
    (entry,) = tool_results(parent_requests(main)[-1])[0]["results"]
    assert entry["summary"] == "delegated: fast did leaf work"
    await settled(gateway)


async def test_a_retry_runs_the_task_on_its_route_again_or_says_why_it_cannot(tmp_path, llm, gateways):
    main, fast = await llm(api_key=PARENT_KEY), await llm(api_key=FAST_KEY)
    answers = iter(["", "fast fixed it"])  # the first attempt answers nothing: it fails
    fast.respond_with(lambda body: {"text": next(answers)})
    delegating = parent_delegating({"tasks": [{"goal": "fragile", "route": "fast"}, {"goal": "fine"}]})
    main.respond_with(lambda body: {"text": "the retry is in"} if "Background delegation results"
                      in str(body["messages"][-1]["content"]) else delegating(body))
    chat = RecordingAdapter()
    gateway = await gateways(routed_config(tmp_path, main, fast), [chat])
    await chat.say("go")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    await settled(gateway)
    session = next(iter(gateway.sessions))
    (failed,) = [c for c in gateway.host.children.recent(session.session_id) if c.route == "fast"]
    await chat.say(f"/agents retry {failed.subagent_id}")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    assert chat.texts("completion") == ["the retry is in"]
    assert [goal(b) for b in fast.requests] == ["fragile", "fragile"]  # on its route again
    await settled(gateway)

    fast.respond_with(lambda body: {"text": ""})
    await chat.say("go again")
    await chat.wait_for(lambda: len(chat.texts("reply")) == 2)
    await settled(gateway)
    failed = [c for c in gateway.host.children.recent(session.session_id) if c.route == "fast"][-1]
    gateway.host.routing.unregister("model_map")
    await chat.say(f"/agents retry {failed.subagent_id}")
    await chat.wait_for(lambda: "command" in chat.kinds() and len(chat.texts("command")) == 2)
    assert chat.texts("command")[-1] == ("Nothing was retried: cannot run 'fragile' again: the delegation backend "
                                         "'model_map' is not available (its plugin is not loaded).")
    assert len(fast.requests) == 3
