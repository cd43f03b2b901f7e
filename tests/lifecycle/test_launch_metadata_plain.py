"""docs/lifecycle.md "Usage": both engines' children read a request's metadata alike, a child on Temporal getting it
through JSON. The copy made at launch (`plain_metadata`) is what JSON makes of it, its strings and numbers too: an
enum's member, a str or int subclass, reached an in-process child as itself (``str()`` of a ``(str, Enum)`` member
is ``Color.RED``) and a child on Temporal as the plain value (``red``)."""

from __future__ import annotations

import enum
import json
from collections import OrderedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from agent import AgentSession, HookRegistry, ToolRegistry
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import AsyncSubagentLifecycle, ChildHost, MemoryJournal, SubagentLaunchRequest, SubagentState
from lifecycle._contract import SubagentLifecycleError, plain_metadata, validate_request


class Color(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Tag(str):
    pass


class Ratio(float):
    pass


def same(a, b) -> bool:
    """Equal, and of the same types all the way down (``1 == 1.0 == True`` and ``Color.RED == "red"`` are not)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(type(k) is str and same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


async def test_an_in_process_child_reads_enum_and_subclass_values_as_a_child_on_temporal_does():
    seen = {}

    def leaf(request):
        seen.update({k: request.metadata[k] for k in ("color", "level", "tag", "ratio", "nested")})
        return {"text": "done"}

    metadata = {"color": Color.RED, "level": Level.HIGH, "tag": Tag("t"), "ratio": Ratio(0.5),
                "nested": {Tag("k"): [Color.RED]}}
    on_temporal = json.loads(json.dumps(metadata))
    service = AsyncSubagentLifecycle(ChildHost(tools=ToolRegistry(), hooks=HookRegistry()), MemoryJournal())
    await service.start()
    try:
        with inside_turn(AgentSession(model=ScriptedModel({"leaf": leaf}))):
            handle = await service.launch(SubagentLaunchRequest(goal="g", metadata=metadata))
            assert (await service.wait(handle, timeout_seconds=5)).state is SubagentState.SUCCEEDED
    finally:
        await service.close()
    assert same(seen, on_temporal), seen
    assert str(seen["color"]) == "red"


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5),
    st.sampled_from([Color.RED, Level.HIGH]), st.text(max_size=5).map(Tag), st.floats(-9, 9).map(Ratio),
)
_keys = st.one_of(st.text(max_size=4), st.text(max_size=4).map(Tag), st.just(Color.RED))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(_keys, inner, max_size=4),
    st.dictionaries(_keys, inner, max_size=4).map(OrderedDict),
), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=5))
def test_the_launch_copy_is_what_json_makes_of_the_metadata(metadata):
    try:
        validate_request(SubagentLaunchRequest("g", metadata=metadata))
    except SubagentLifecycleError:
        return
    copy = plain_metadata(metadata)
    assert same(copy, json.loads(json.dumps(metadata))), (metadata, copy)
