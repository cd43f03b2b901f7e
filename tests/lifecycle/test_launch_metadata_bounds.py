"""A launch's metadata is refused in work bounded by its size limit, not by the metadata's own size, and its
nesting is limited the same wherever in the stack `launch` is called."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping

import pytest

from lifecycle import AsyncSubagentLifecycle, MemoryJournal, SubagentLaunchRequest, SubagentLifecycleError
from lifecycle._contract import MAX_METADATA_BYTES, validate_request

SIZE_MSG = "metadata exceeds 8192 bytes."
JSON_MSG = "metadata must be JSON-serializable."
DEPTH_MSG = "metadata nests deeper than 100 levels."


def refusal(metadata: object) -> str:
    with pytest.raises(SubagentLifecycleError) as refused:
        validate_request(SubagentLaunchRequest("x", metadata=metadata))  # type: ignore[arg-type]
    return str(refused.value)


def nested(levels: int) -> list:
    """``levels`` lists, each in the one before."""
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


class CountingMapping(Mapping):
    """A mapping of many entries that counts how many of them were read."""

    def __init__(self, size: int) -> None:
        self.size, self.read = size, 0

    def __getitem__(self, key: str) -> int:
        return int(key)

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[str]:
        for index in range(self.size):
            self.read += 1
            yield str(index)


def test_an_enormous_mapping_is_refused_after_reading_no_more_of_it_than_the_limit_allows():
    # The shape check queued every entry of it before looking at the size: a million here, ten million ids
    # in a list held the event loop for 7 s, and `json.dumps` then encoded all of it, only to refuse it.
    entries = CountingMapping(1_000_000)
    assert refusal({"opts": entries}) == SIZE_MSG
    assert entries.read <= MAX_METADATA_BYTES


@pytest.mark.parametrize("journal", ["sqlite", "memory"])
async def test_the_service_refuses_a_huge_list_in_metadata_at_once_and_launches_nothing(env, journal):
    service = env.service
    if journal == "memory":
        service = AsyncSubagentLifecycle(service.host, MemoryJournal())
        await service.start()
    try:
        request = SubagentLaunchRequest("Summarise these.", metadata={"ids": list(range(2_000_000))})
        with env.turn():
            began = time.perf_counter()
            with pytest.raises(SubagentLifecycleError, match=f"^{SIZE_MSG}$"):
                await service.launch(request)
            assert time.perf_counter() - began < 0.5  # 2.3 s when the whole list was walked and encoded
        assert service.host_view().children(env.parent.session_id) == ()
        assert await service.journal.unfinished() == []
    finally:
        if journal == "memory":
            await service.close()


def at_stack_depth(frames: int, call):
    return call() if frames == 0 else at_stack_depth(frames - 1, call)


def test_nesting_is_limited_alike_from_a_shallow_or_a_deep_stack():
    # Refused by `json.dumps` running out of recursion, the limit was wherever the caller's stack left it:
    # 959 levels from a shallow one, fewer from a deep one, and named "not JSON-serializable" though
    # `json.dumps` encodes it from the plugin's own code.
    deepest = SubagentLaunchRequest("x", metadata={"a": nested(99)})
    validate_request(deepest)
    at_stack_depth(700, lambda: validate_request(deepest))
    assert refusal({"a": nested(100)}) == DEPTH_MSG
    assert refusal({"a": nested(960)}) == DEPTH_MSG
    assert refusal({"a": [{"b": nested(99)}]}) == DEPTH_MSG


def test_a_loop_is_not_json_but_a_list_held_twice_is():
    looped: list = []
    looped.append(looped)
    assert refusal({"a": looped}) == JSON_MSG
    shared = ["x", "y"]
    validate_request(SubagentLaunchRequest("x", metadata={"a": shared, "b": [shared, shared]}))


@pytest.mark.parametrize("metadata", [
    {"k": "v" * 8183},  # exactly 8192 bytes as sorted JSON
    {"k": [0] * 2728},  # 8191 bytes: one digit each, ", " between them
    {str(i): None for i in range(600)},
])
def test_metadata_at_the_limit_is_still_accepted(metadata):
    assert len(json.dumps(metadata, sort_keys=True)) <= MAX_METADATA_BYTES
    validate_request(SubagentLaunchRequest("x", metadata=metadata))


class FreshLists(dict):
    """A dict whose items are made anew at each reading (`json.dumps` reads them so too, one held or not)."""

    def items(self):  # type: ignore[override]
        return [("v", [1, 2])]


class Computed(Mapping):
    """Metadata whose values are made when read: each a new list, gone once nothing holds it."""

    def __getitem__(self, key: str) -> list:
        return [FreshLists(v=None)]

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator[str]:
        return iter(["k"])


def test_a_list_made_where_one_read_before_was_is_no_loop():
    # The loop check kept the ids of the containers it was inside, not the containers: one freed while its
    # items were read left its id to a list made next (CPython reuses the memory), taken for a loop.
    metadata = Computed()
    assert json.dumps(dict(metadata)) == '{"k": [{"v": [1, 2]}]}'
    validate_request(SubagentLaunchRequest("x", metadata=metadata))
