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


def test_a_record_with_a_weakref_slot_is_refused_at_import():
    # CPython refuses to switch an instance between classes with a __weakref__ slot, twin and frozen
    # alike: every `_build`, and every wide record's __init__, would raise at run time instead.
    @dataclasses.dataclass(frozen=True, slots=True, weakref_slot=True)
    class Referenced:
        a: int

    with pytest.raises(TypeError, match="weakref_slot"):
        fast_init(Referenced)


@fast_init
@dataclasses.dataclass(frozen=True, slots=True)
class Wide:
    """Enough fields to be built through the twin class."""

    a: int
    b: int
    c: int
    d: int
    e: int
    f: int
    g: int
    h: int
    i: int = 9
    j: list = dataclasses.field(default_factory=list)


def test_a_wide_record_is_built_as_its_own_frozen_class():
    record = Wide(1, 2, 3, 4, 5, 6, 7, 8)
    assert type(record) is Wide and (record.a, record.h, record.i, record.j) == (1, 8, 9, [])
    assert record == Wide(1, 2, 3, 4, 5, 6, 7, 8) and hash(Wide(1, 2, 3, 4, 5, 6, 7, 8, j=())) == hash(
        Wide(1, 2, 3, 4, 5, 6, 7, 8, j=()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.a = 2  # type: ignore[misc]
    assert dataclasses.replace(record, b=0) == Wide(1, 0, 3, 4, 5, 6, 7, 8)
    assert list(inspect.signature(Wide).parameters) == [f.name for f in dataclasses.fields(Wide)]


def test_a_subclass_instance_of_a_wide_record_is_built_field_by_field():
    class Tagged(Wide):  # inherits the fast __init__; its layout adds an attribute dict
        pass

    record = Tagged(1, 2, 3, 4, 5, 6, 7, 8)
    assert type(record) is Tagged and (record.a, record.h, record.i) == (1, 8, 9)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.a = 2  # type: ignore[misc]



@pytest.mark.parametrize(("cls", "args"), [(Sample, (1,)), (Wide, (1, 2, 3, 4, 5, 6, 7, 8))])
def test_build_makes_the_record_the_class_makes(cls, args):
    record = cls._build(*args)
    assert type(record) is cls and record == cls(*args)
    assert list(inspect.signature(cls._build).parameters) == [f.name for f in dataclasses.fields(cls)]
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.a = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        cls._build()


def test_build_takes_defaults_and_factories_as_the_class_does():
    assert Sample._build(1, c=[3]) == Sample(1, c=[3]) and Sample._build(1, "x").b == "x"
    assert Sample._build(1).c == [] and Sample._build(1).c is not Sample._build(1).c
    assert hash(Wide._build(1, 2, 3, 4, 5, 6, 7, 8, j=())) == hash(Wide(1, 2, 3, 4, 5, 6, 7, 8, j=()))
