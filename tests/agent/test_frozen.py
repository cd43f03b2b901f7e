"""fast_init builds the same frozen records as the dataclass __init__ it replaces."""

import dataclasses
import inspect

import pytest

from agent import ActiveTurn, ModelRequest, ModelResponse, ToolTraceEntry, TurnResult, Usage
from agent._frozen import fast_init


@fast_init
@dataclasses.dataclass(frozen=True, slots=True)
class Sample:
    a: int
    b: str = "b"
    c: list = dataclasses.field(default_factory=list)


def test_arguments_defaults_and_factories_behave_as_the_dataclass_init_does():
    assert Sample(1) == Sample(a=1, b="b", c=[])
    assert (Sample(1, "x", [2]).b, Sample(1, c=[3]).c) == ("x", [3])
    assert Sample(1).c is not Sample(1).c  # a fresh default per instance
    with pytest.raises(TypeError):
        Sample()
    with pytest.raises(TypeError):
        Sample(1, nope=2)
    assert list(inspect.signature(Sample).parameters) == ["a", "b", "c"]


def test_records_stay_frozen():
    record = Sample(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.a = 2  # type: ignore[misc]
    assert dataclasses.replace(record, a=5) == Sample(5)


@pytest.mark.parametrize("cls", [ActiveTurn, ModelRequest, ModelResponse, ToolTraceEntry, TurnResult, Usage])
def test_the_agent_records_keep_their_signatures(cls):
    names = [f.name for f in dataclasses.fields(cls)]
    assert list(inspect.signature(cls).parameters) == names


def test_only_frozen_slotted_dataclasses_without_post_init_qualify():
    with pytest.raises(TypeError):
        fast_init(dataclasses.dataclass(slots=True)(type("Mutable", (), {"__annotations__": {"a": int}})))

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self):
            pass

    with pytest.raises(TypeError):
        fast_init(Checked)
