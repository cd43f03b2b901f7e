"""``Unknown toolsets: …`` names what it refuses cut (`lifecycle._routing.listed_names`), as every other
error that echoes a caller's value does: it repeated each unknown name whole."""

from __future__ import annotations

import pytest

from lifecycle import SubagentLaunchRequest, SubagentLifecycleError


async def test_unknown_toolsets_are_named_cut_and_counted(env):
    names = ("z" * 100_000, *(f"nope{i:02}" for i in range(12)))
    with env.turn(), pytest.raises(SubagentLifecycleError) as err:
        await env.service.launch(SubagentLaunchRequest(goal="ok", allowed_toolsets=names))
    message = str(err.value)
    assert len(message) < 1_000
    assert message == ("Unknown toolsets: " + ", ".join(f"nope{i:02}" for i in range(10)) + " and 3 more.")
    assert env.service.host_view().children("parent-1") == ()


async def test_a_long_unknown_name_is_cut_with_an_ellipsis(env):
    with env.turn(), pytest.raises(SubagentLifecycleError) as err:
        await env.service.launch(SubagentLaunchRequest(goal="ok", allowed_toolsets=("y" * 100_000, "also")))
    assert str(err.value) == f"Unknown toolsets: also, {'y' * 59}…."
