"""Steering a child whose end is known but not yet published (its `subagent_stop` hooks run): it
reads no more, so `steer` says False rather than report a text handed over that no one will read."""

from __future__ import annotations

import asyncio

from lifecycle import InProcessEngine, SubagentLaunchRequest, SubagentState


class TakesSteersUntilTold(InProcessEngine):
    """As an engine whose children run elsewhere does: it takes a steer for a child it still follows,
    until it hears the child ended (the in-process engine refuses one already between turns)."""

    def __init__(self) -> None:
        super().__init__(10)
        self.steered: list[str] = []

    def steer(self, subagent_id: str, text: str) -> bool:
        if subagent_id not in self._runs:
            return False
        self.steered.append(text)
        return True


async def test_steering_a_finishing_child_returns_false_and_sends_nothing(make_env):
    engine = TakesSteersUntilTold()
    env = await make_env(engine=engine)
    in_hook, go_on = asyncio.Event(), asyncio.Event()

    async def slow_stop(**event):
        in_hook.set()
        await go_on.wait()

    env.hooks.register("subagent_stop", slow_stop)
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="do it"))
        await asyncio.wait_for(in_hook.wait(), 5)
        assert (await env.service.status(handle)).state is SubagentState.RUNNING  # until its result is published
        steered = await env.service.steer(handle, "one more thing")
        go_on.set()
        done = await env.service.wait(handle, timeout_seconds=5)
    assert steered is False and engine.steered == []
    assert done.state is SubagentState.SUCCEEDED
