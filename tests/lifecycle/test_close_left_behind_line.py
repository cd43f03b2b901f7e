"""The in-process engine's line for a child its close leaves behind says what happens to it: one that had ended,
whose ``subagent_stop`` hook still runs, keeps its result (the close journals it), so it is not called a call that
ignores cancellation, to be ended as interrupted by the next start."""

from __future__ import annotations

import logging

from lifecycle import SubagentLaunchRequest
from tests.lifecycle.test_close_slow_stop_hook import slow_stop_hook
from tests.polling import until


async def test_a_child_left_in_its_stop_hook_is_named_as_such_not_as_ignoring_cancellation(make_env, caplog):
    env = await make_env()
    entered, gate, left = slow_stop_hook(env)
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="quick"))
    await entered.wait()  # the child has succeeded; its hook still runs
    with caplog.at_level(logging.WARNING, logger="lifecycle.engine"):
        await env.service.close(grace=0.01)
    lines = [r for r in caplog.records if r.name == "lifecycle.engine" and "left behind" in r.getMessage()]
    assert [(r.levelno, r.getMessage()) for r in lines] == [(
        logging.WARNING, f"child {handle.subagent_id} had ended, but its memory notification or subagent_stop hooks"
        " did not end within 0 s of the close: left behind, its result journaled by the close")]
    gate.set()
    await left.wait()
    await until(lambda: not env.service.engine._runs)
