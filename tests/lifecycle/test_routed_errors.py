"""A routed child's error names its route, never the model behind it: a server's own words ("The model
`o3` does not exist") reached the parent model, and through it the chat, in the entry's ``error``."""

from __future__ import annotations

import json

import pytest

from agent import ToolContext
from agent.models.scripted import ScriptedModel
from lifecycle import ChildRoute, RouteOption, delegate_tool
from lifecycle._entries import routed

MODEL = "acme/o3-secret"
SAID = "The model `o3-secret` does not exist; try acme/o3-secret-mini or ACME/O3-SECRET"
SHOWN = "The model `lab` does not exist; try acme/o3-secret-mini or lab"


class Backend:
    name = "labs"
    description = "test routes"

    def __init__(self):
        self.model = ScriptedModel({"*": lambda req: {"error": "not_found", "message": SAID}}, name=MODEL)

    def options(self):
        return [RouteOption("lab", "the lab")]

    def resolve(self, route):
        return ChildRoute(route, model=self.model)


@pytest.fixture
async def lab(make_env):
    env = await make_env(delegate=True)
    env.service.host.routing.register(Backend())
    return env


def context(env):
    return ToolContext(env.parent, "call-1", env.parent.workspace, {}, "turn-1")


async def test_an_inline_routed_childs_error_names_its_route_not_its_model(lab):
    out = await delegate_tool(lab.service, backend="labs").invoke({"goal": "a", "route": "lab"}, context(lab))
    [entry] = json.loads(out)["results"]
    assert entry["status"] != "completed" and entry["route"] == {"name": "lab"} and entry["model"] is None
    # Whole names only, in any case: another model the server names is not half-cut into a false one.
    assert entry["error"].endswith(SHOWN)


async def test_a_background_routed_childs_error_names_its_route_not_its_model(lab):
    dispatches = []
    tool = delegate_tool(lab.service, mode="background", backend="labs", on_dispatch=dispatches.append)
    await tool.invoke({"goal": "a", "route": "lab"}, context(lab))
    [dispatch] = dispatches
    [task] = dispatch.tasks
    [entry] = await lab.service.host_view().finished_entries([(0, task.subagent_id)], lab.parent.workspace,
                                                             routes={task.subagent_id: "lab"})
    assert entry["model"] is None and entry["error"].endswith(SHOWN)


def test_only_whole_names_are_replaced_and_unrouted_entries_are_left_alone():
    item = {"model": "gpt-4o", "error": "gpt-4o failed; gpt-4o-mini and xgpt-4o and gpt-4o.5 did not"}
    assert routed(dict(item), None)["error"] == item["error"]
    assert routed(dict(item), "fast", "openai")["error"] == "fast failed; gpt-4o-mini and xgpt-4o and gpt-4o.5 did not"
    said = routed({"model": "m", "error": "OpenAI says: m is gone"}, "fast", "openai")
    assert said == {"model": None, "error": "fast says: fast is gone", "route": {"name": "fast"}}
