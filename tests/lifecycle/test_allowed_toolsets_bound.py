"""A launch's ``allowed_toolsets`` is refused by its count before any name is read: a million unknown names
held the event loop for seconds, made into a set and sorted only to be refused as unknown."""

from __future__ import annotations

import time

import pytest

from lifecycle import SubagentLaunchRequest, SubagentLifecycleError
from lifecycle._contract import MAX_ALLOWED_TOOLSETS, validate_request


def names(count: int) -> tuple[str, ...]:
    return tuple(f"nope{i:07}" for i in range(count))


async def test_a_million_unknown_toolsets_are_refused_by_their_count_at_once(env):
    request = SubagentLaunchRequest("ok", allowed_toolsets=names(1_000_000))
    with env.turn(), pytest.raises(SubagentLifecycleError) as err:
        began = time.perf_counter()
        try:
            await env.service.launch(request)
        finally:
            elapsed = time.perf_counter() - began
    assert (str(err.value), err.value.code) == (
        "allowed_toolsets lists 1000000 names; at most 256 are allowed.", "INVALID_REQUEST")
    assert elapsed < 0.5  # 1.5 s to 3 s when the names were made a set and sorted
    assert env.service.host_view().children("parent-1") == ()
    assert await env.service.journal.unfinished() == []


async def test_as_many_unknown_toolsets_as_allowed_are_still_named_as_unknown(env):
    with env.turn(), pytest.raises(SubagentLifecycleError) as err:
        await env.service.launch(SubagentLaunchRequest("ok", allowed_toolsets=list(names(MAX_ALLOWED_TOOLSETS))))
    listed = ", ".join(f"nope{i:07}" for i in range(10))
    assert str(err.value) == f"Unknown toolsets: {listed} and {MAX_ALLOWED_TOOLSETS - 10} more."


@pytest.mark.parametrize("kind", [tuple, list])
def test_one_name_past_the_limit_is_refused_whatever_the_names(kind):
    request = SubagentLaunchRequest("ok", allowed_toolsets=kind(["file", 3] * 128 + [""]))  # type: ignore[arg-type]
    with pytest.raises(SubagentLifecycleError, match="^allowed_toolsets lists 257 names; at most 256 are allowed.$"):
        validate_request(request)
