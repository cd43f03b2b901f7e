"""Property: nothing but the exact handle the service issued reaches a child."""

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lifecycle import SubagentLaunchRequest, SubagentState

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)
FIELDS = ["contract_version", "subagent_id", "parent_session_id", "correlation_id", "created_at",
          "provider", "model", "role", "depth", "capability"]


@st.composite
def mutations(draw):
    kind = draw(st.sampled_from(["garbage", "change", "drop", "extra"]))
    if kind == "garbage":
        return lambda handle: draw(json_values)
    field = draw(st.sampled_from(FIELDS))
    value = draw(json_values)
    if kind == "change":
        return lambda handle: {**handle, field: value} if handle[field] != value else {**handle, field: [value]}
    if kind == "drop":
        return lambda handle: {k: v for k, v in handle.items() if k != field}
    return lambda handle: {**handle, f"x_{field}": value}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutate=mutations())
async def test_no_malformed_handle_ever_reaches_a_child(env, mutate):
    with env.turn():
        if not hasattr(env, "victim"):
            env.victim = await env.service.launch(SubagentLaunchRequest(goal="[hang] victim"))
        bad = mutate(env.victim.to_dict())
        assert (await env.service.status(bad)).state is SubagentState.UNKNOWN
        assert (await env.service.cancel(bad)).unknown_handle
        assert (await env.service.result(bad)).error_classification == "UNKNOWN_HANDLE"
        assert not (await env.service.reconnect(bad)).connected
        await asyncio.sleep(0)
        assert (await env.service.status(env.victim)).state in (SubagentState.PENDING, SubagentState.STARTING,
                                                                 SubagentState.RUNNING)
