"""The journal's sweep when the wall clock is set back while a delegation's results are still needed: a child
whose end is dated before the delegation's dispatch keeps its result until the host has delivered it."""

import pytest

from lifecycle import SubagentLaunchRequest
from lifecycle._service import DISPATCH_MARGIN_SECONDS
from tests.lifecycle.conftest import FakeClock

HOUR = 3600.0


class SteppingClock(FakeClock):
    """Monotonic time as `FakeClock`'s; wall time `step`s apart from it (NTP setting back a clock that ran fast)."""

    def __init__(self) -> None:
        super().__init__()
        self.wall_ahead = 0.0

    def time(self) -> float:
        return self.now + self.wall_ahead

    def step(self, seconds: float) -> None:
        self.wall_ahead += seconds


async def finished_child(env) -> str:
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="quick"))
        await env.service.wait(handle, timeout_seconds=5)
    return handle.subagent_id


@pytest.mark.parametrize("set_back", [2 * HOUR, 3 * DISPATCH_MARGIN_SECONDS])
async def test_a_child_that_ended_after_the_clock_was_set_back_keeps_its_result_while_needed(make_env, set_back):
    # Before, its end dated before the dispatch, it was forgotten an hour later, the delivery still owed: the chat
    # got the delegation's results as lost.
    clock = SteppingClock()
    env = await make_env(clock=clock, retention=HOUR, sweep=3600.0)
    dispatched = clock.time()
    needed: list[float | None] = [dispatched]
    env.service.host_view().keep_results_since(lambda: needed[0])
    await env.service.sweep()  # the clocks read before the step
    clock.step(-set_back)
    child = await finished_child(env)
    assert (await env.service.journal.get(child)).completed_at < dispatched

    clock.advance(2 * HOUR)  # the delivery delayed past the retention window
    await env.service.sweep()
    assert await env.service.journal.get(child) is not None
    needed[0] = None  # delivered
    await env.service.sweep()
    assert await env.service.journal.get(child) is None


async def test_a_child_that_ended_long_before_the_dispatch_is_forgotten_as_before(make_env):
    clock = SteppingClock()
    env = await make_env(clock=clock, retention=HOUR, sweep=3600.0)
    child = await finished_child(env)
    clock.advance(DISPATCH_MARGIN_SECONDS + HOUR)
    env.service.host_view().keep_results_since(lambda: clock.time())  # a delegation dispatched now
    await env.service.sweep()
    assert await env.service.journal.get(child) is None
