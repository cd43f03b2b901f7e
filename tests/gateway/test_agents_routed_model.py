"""``/agents`` names a routed child by its route, never the model behind it: it listed ``model o3-secret,
route deep``, showing the chat what delegate_task's results and ``/delegation`` hide (a route is the
operator's, its model, provider and endpoint with it)."""

import dataclasses

from gateway.agents_command import _line
from lifecycle import ChildSnapshot, SubagentState

RUNNING = ChildSnapshot("sa-1", "s-1", "t-1", "look", "leaf", SubagentState.RUNNING, 100.0, 100.0, None,
                        "waiting for the model", None, None, "o3-secret")


def test_a_routed_child_is_listed_with_its_route_and_not_its_model():
    line = _line(dataclasses.replace(RUNNING, route="deep"), 103.0)
    assert line == "• sa-1 — look — running, 3 s, waiting for the model, route deep"
    assert "o3-secret" not in line


def test_a_child_on_the_default_child_model_is_listed_with_its_model():
    assert _line(RUNNING, 103.0) == "• sa-1 — look — running, 3 s, waiting for the model, model o3-secret"
