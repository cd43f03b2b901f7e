"""`lifecycle.Routing` and delegate_task's route resolution with a backend of the test's own:
refusals per task, narrowing, failing backends, and relaunching on a route."""

from __future__ import annotations

import dataclasses
import json

import pytest

from agent import ToolContext
from agent.models.scripted import ScriptedModel
from lifecycle import (
    BackendUnavailable,
    ChildRoute,
    ChildSpec,
    RouteOption,
    RouteRefused,
    Routing,
    SubagentLifecycleError,
    delegate_tool,
)


class Backend:
    name = "labs"
    description = "test routes"

    def __init__(self):
        self.model = ScriptedModel({"*": lambda req: {"text": f"lab did {req.metadata['goal']}"}}, name="lab-model")

    def options(self):
        return [RouteOption("lab", "the lab"), RouteOption("narrow", "files only"), RouteOption("odd", "odd"),
                RouteOption("broken", "breaks"), RouteOption("shy", "refuses")]

    def resolve(self, route):
        if route == "broken":
            raise KeyError("a bug, with a secret sk-never-shown-1")
        if route == "shy":
            raise RouteRefused("not today")
        toolsets = {"narrow": ("file",), "odd": ("teleport",)}.get(route)
        return ChildRoute(route, model=self.model, system_prompt="You are the lab.", toolsets=toolsets)


@pytest.fixture
async def lab(make_env):
    env = await make_env(delegate=True)
    env.service.host.routing.register(Backend())
    return env


async def call(env, args):
    tool = delegate_tool(env.service, backend="labs")
    out = await tool.invoke(args, ToolContext(env.parent, "call-1", env.parent.workspace, {}, "turn-1"))
    return json.loads(out)["results"]


async def test_routes_resolve_per_task_and_refusals_name_a_reason_only(lab):
    tasks = [{"goal": g, "route": r} for g, r in
             [("a", "lab"), ("b", "odd"), ("c", "broken"), ("d", "shy"), ("e", "nope")]] + [{"goal": "f"}]
    a, b, c, d, e, f = await call(lab, {"tasks": tasks})
    assert (a["summary"], a["route"], a["model"]) == ("lab did a", {"name": "lab"}, None)
    assert b["route"]["reason"] == "route 'odd' names toolsets nobody provides: teleport"
    assert c["route"]["reason"] == "route 'broken' could not be set up (KeyError)"
    assert d["route"]["reason"] == "not today"
    assert e["route"]["reason"] == "no route 'nope'; the routes are: lab, narrow, odd, broken, shy"
    assert all(x["status"] == "error" and x["subagent_id"] is None for x in (b, c, d, e))
    assert f["summary"] == "done: f" and "route" not in f


async def test_a_route_narrows_toolsets_and_gives_its_persona(lab):
    (entry,) = await call(lab, {"goal": "look", "route": "narrow"})
    (request,) = lab.service.host.routing.backends["labs"].model.requests
    assert request.messages[0]["content"].startswith("You are the lab.")
    assert {t["function"]["name"] for t in request.tools} == {"list_files", "read_file", "block"}
    assert entry["route"] == {"name": "narrow"}


async def test_relaunch_resolves_the_route_again_or_starts_nothing(lab):
    view = lab.service.host_view()
    spec = ChildSpec(goal="again", route="lab", backend="labs")
    (sid,) = await view.relaunch(lab.parent, "turn-2", [spec])
    await view.wait_finished([sid])
    (child,) = view.recent(lab.parent.session_id)  # a finished child's snapshot keeps its route and task
    assert child.summary == "lab did again" and child.route == "lab" and child.model == "lab-model"
    assert child.task.route == "lab" and child.task.backend == "labs"
    lab.service.host.routing.unregister("labs")
    with pytest.raises(SubagentLifecycleError, match="'labs' is not available"):
        await view.relaunch(lab.parent, "turn-3", [spec])


def test_the_default_backend_is_always_there_and_names_are_unique():
    routing = Routing()
    assert routing.names() == ["default"] and routing.available("default") and routing.options("default") == ()
    routing.register(Backend())
    with pytest.raises(ValueError, match="already registered"):
        routing.register(Backend())
    assert routing.names() == ["default", "labs"] and routing.description("labs") == "test routes"
    with pytest.raises(RouteRefused, match="has no routes"):
        routing.resolve("default", "lab")


class Faulty:
    """A plugin's buggy backend: its options or its resolved routes are not what the contract says."""

    name = "faulty"
    description = "buggy routes"

    def __init__(self, options=None, resolved=None):
        self._options, self._resolved = options, resolved

    def options(self):
        if self._options is None:
            raise RuntimeError("listing failed, sk-never-shown-2")
        return self._options

    def resolve(self, route):
        return self._resolved


@pytest.mark.parametrize("options", [None, ["fast"], [RouteOption("fast", None)], 42])
async def test_a_backend_that_fails_to_list_its_options_refuses_its_routed_tasks_only(make_env, caplog, options):
    env = await make_env(delegate=True)
    env.service.host.routing.register(Faulty(options=options))
    with pytest.raises(BackendUnavailable, match=r"^the delegation backend 'faulty' failed to list its options "
                                                 r"\((RuntimeError|AttributeError|TypeError)\)$"):
        env.service.host.routing.options("faulty")
    (logged,) = [r for r in caplog.records if r.name == "lifecycle.routing"]
    assert logged.getMessage() == "delegation backend faulty failed to list its options" and logged.exc_info
    tool = delegate_tool(env.service, backend="faulty")  # built all the same, offering no routes
    assert "route" not in tool.parameters["properties"]
    caplog.clear()
    out = await tool.invoke({"tasks": [{"goal": "a", "route": "fast"}, {"goal": "b"}]},
                            ToolContext(env.parent, "call-1", env.parent.workspace, {}, "turn-1"))
    a, b = json.loads(out)["results"]
    assert a["status"] == "error" and a["route"]["reason"].startswith("the delegation backend 'faulty' failed to list")
    assert b["summary"] == "done: b"
    assert "sk-never-shown-2" not in out and len(caplog.records) == 1  # once per listing that failed


@pytest.mark.parametrize(("resolved", "problem"), [
    (None, "the backend returned NoneType"),
    ({"route": "fast"}, "the backend returned dict"),
    (ChildRoute("fast", toolsets="file"), "its toolsets are a str, not a list of names"),
    (ChildRoute("fast", toolsets=["file", 3]), "its toolsets are a list, not a list of names"),
])
async def test_a_route_resolved_to_something_else_than_a_child_route_is_refused(lab, resolved, problem):
    lab.service.host.routing.register(Faulty(options=[RouteOption("fast", "quick")], resolved=resolved))
    tool = delegate_tool(lab.service, backend="faulty")
    out = await tool.invoke({"tasks": [{"goal": "a", "route": "fast"}, {"goal": "b"}]},
                            ToolContext(lab.parent, "call-1", lab.parent.workspace, {}, "turn-1"))
    a, b = json.loads(out)["results"]
    assert a["route"]["reason"] == f"route 'fast' could not be set up ({problem})" and a["subagent_id"] is None
    assert b["summary"] == "done: b"


def test_a_list_of_toolsets_is_kept_as_a_tuple():
    routing = Routing()
    routing.register(Faulty(options=[RouteOption("fast", "quick")], resolved=ChildRoute("fast", toolsets=["file"])))
    assert routing.resolve("faulty", "fast", frozenset({"file"})).toolsets == ("file",)


async def test_a_child_model_failing_mid_batch_leaves_none_of_the_batch_behind(lab):
    # The routed task's record was held and journaled PENDING before the next task's child model raised: never
    # queued, it stayed PENDING for good (a restart then reported it interrupted).
    def broken(parent):
        raise RuntimeError("no API key for the child model")

    lab.service.host = dataclasses.replace(lab.service.host, child_model=broken)
    with pytest.raises(RuntimeError):
        await call(lab, {"tasks": [{"goal": "[hang] routed", "route": "lab"}, {"goal": "plain"}]})
    assert lab.service.host_view().children("parent-1") == ()
    await lab.service.journal.sync()
    assert await lab.service.journal.unfinished() == []
