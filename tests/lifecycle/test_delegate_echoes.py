"""delegate_task's errors name a bad model-written value cut short: the tool result is read again in
every later request of the turn, and a route, role or argument name of 100,000 characters came back
whole (a refused route three times)."""

from __future__ import annotations

import json
import re

import pytest

from agent import ToolError
from tests.lifecycle.test_delegate import delegate
from tests.lifecycle.test_routing import Backend, call

ECHO_CHARS, ECHO_NAMES = 60, 10
"""`lifecycle._routing`'s bounds, spelled out: the test shows what the model reads."""
HUGE = "x" * 100_000
CUT = "x" * (ECHO_CHARS - 1) + "…"
BOUND = 1_000
"""Far above any of these errors' own words, far below what they echoed."""


async def test_a_refused_route_is_named_cut_short_and_the_rest_of_the_batch_runs(make_env):
    env = await make_env(delegate=True)
    env.service.host.routing.register(Backend())
    refused, ran = await call(env, {"tasks": [{"goal": "a", "route": HUGE}, {"goal": "b"}]})
    assert refused["route"]["reason"] == f"no route '{CUT}'; the routes are: lab, narrow, odd, broken, shy"
    assert refused["route"]["name"] == CUT and refused["error"] == f"route refused: {refused['route']['reason']}"
    assert len(json.dumps(refused)) < BOUND
    assert ran["summary"] == "done: b"


@pytest.mark.parametrize(("args", "message"), [
    ({"goal": "g", "role": HUGE}, f'`role` must be "leaf" or "orchestrator", got "{CUT}"'),
    ({"tasks": [{"goal": "g", "role": [HUGE, 2]}]}, "task 0: `role` must be \"leaf\" or \"orchestrator\", got [\"x"),
    ({"goal": "g", HUGE: 1}, f"unknown argument(s) {CUT}; use goal/context"),
    ({"goal": "g", **{f"bogus{i:03}": 1 for i in range(50)}},
     f"unknown argument(s) {', '.join(f'bogus{i:03}' for i in range(ECHO_NAMES))} and 40 more; use goal/context"),
    ({"tasks": [{"goal": "g", HUGE: 1}]}, f"task 0: unknown argument(s) {CUT}; a task takes goal"),
    ({"goal": "g", "images": [" " * 100_000]}, "task 0: images[0] must be a non-empty string"),
])
async def test_a_bad_argument_is_named_cut_short(make_env, args, message):
    env = await make_env(delegate=True)
    with pytest.raises(ToolError, match=re.escape(message)) as raised:
        await delegate(env, args)
    assert len(str(raised.value)) < BOUND


@pytest.mark.parametrize(("args", "message"), [
    ({"action": HUGE}, f"action must be one of delegate, list, steer, stop; got '{CUT}'"),
    ({"action": "stop", "subagent_id": HUGE}, f"no running subagent '{CUT}' in this session"),
    ({"action": "list", HUGE: 1}, f"action=list takes no other argument, not {CUT}; to start subagents"),
])
async def test_a_bad_live_control_argument_is_named_cut_short(make_env, args, message):
    env = await make_env(delegate=True)
    with pytest.raises(ToolError, match=re.escape(message)) as raised:
        await delegate(env, args, mode="background", on_dispatch=lambda dispatch: None)
    assert len(str(raised.value)) < BOUND
