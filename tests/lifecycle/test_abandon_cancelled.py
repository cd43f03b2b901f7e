"""The work that ends an abandoned launch (`Supervisor._abandon`), cancelled itself while it waits for the
launch's commit (the process's end cancels every task left: `gateway.left_behind.end_the_rest`): it ends
cancelled, its children left to the next start as after a kill, not finished against the journal it waits on."""

import asyncio

import pytest

from tests.lifecycle.test_launch_commit import Held, _launch_held
from tests.polling import until


@pytest.fixture(params=["sqlite", "memory"])
async def held(env, request):
    held = Held(env, request.param)
    if request.param == "memory":
        await held.service.start()
    yield held
    held.release()
    if request.param == "memory":
        await held.service.close()


async def test_an_abandoned_launch_cancelled_while_its_commit_waits_ends_cancelled(held, env):
    # Its cancellation was taken for the journal's: it went on to finish the children, waiting on the
    # journal again (on SQLite for the lock that held the commit), and did not end until that let go.
    launching, _ = await _launch_held(held, env)
    launching.cancel()
    await until(lambda: held.waits() == 2)  # the first wait, cancelled, and the second
    [abandoning] = held.service._supervisor._given_up
    abandoning.cancel()
    await asyncio.wait((abandoning,), timeout=5)  # a bound: it ends within a few turns of the loop
    assert abandoning.cancelled()
    with pytest.raises(asyncio.CancelledError):
        await launching
