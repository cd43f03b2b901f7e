"""A Slack message the gateway takes while it stops (its stop has begun, the adapter still hands events over: the
message is recorded for the next start, in no queue) that its user deletes: in that same window, or at the next
start before the start queues it again. Dropped as a queued one is (`gateway.message_edits`): never answered, never
sent to the model, its text kept nowhere. The real slack-bolt client inside `SlackAdapter` against the loopback
`FakeSlack` over Socket Mode; the gateway's stop held after it stopped taking events (`held_stop`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from tests.scenarios.test_slack_deletions_waiting_elsewhere import deletion_acked, model_read, stored_anywhere
from tests.scenarios.test_slack_edits import acked
from tests.scenarios.test_start_replay_deletions import SECRET, answers, started_slack
from tests.scenarios.test_start_replay_edits import DM, EditsSeen, HeldStart, echo


@asynccontextmanager
async def held_stop(gateway: Gateway) -> AsyncIterator[None]:
    """The gateway's stop has begun (it takes no new events) and its adapters have not stopped yet, until the block
    ends; then the stop goes on to its end."""
    release, closing = asyncio.Event(), gateway.dead_letters.close

    async def slow_close() -> None:
        await release.wait()
        await closing()

    gateway.dead_letters.close = slow_close  # type: ignore[method-assign]
    stopping = asyncio.ensure_future(gateway.stop(grace=0))
    try:
        await asyncio.wait_for(_not_accepting(gateway), 5)
        yield
    finally:
        release.set()
        await stopping


async def _not_accepting(gateway: Gateway) -> None:
    while gateway._accepting:
        await asyncio.sleep(0)


async def taken_while_stopping(fake: FakeSlack, gateway: Gateway, model, *, deleted: bool) -> str:
    """"first" runs; the stop begins; the secret comes and is taken, for the next start; if ``deleted``, its user
    deletes it before the adapter stops. Returns the secret's ts."""
    await fake.push_dm("U1", "first")
    await model.reached("first")
    async with held_stop(gateway):
        pasted = (await fake.push_dm("U1", SECRET))["event"]["ts"]
        await acked(fake)
        assert gateway.store.inbox.arrival("slack", f"{DM}:{pasted}") is not None  # taken, for the next start
        if deleted:
            await fake.push_deletion(DM, pasted)
            await deletion_acked(fake)  # Slack will not send it again
            assert gateway.store.inbox.settled("slack", f"{DM}:{pasted}")
    return pasted


async def test_a_message_taken_while_stopping_is_dropped_by_its_deletion_in_that_window(tmp_path):
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
    async with FakeSlack() as fake:
        model = echo(gated=True)
        gateway = await start_gateway(config, [EditsSeen(fake)], model=model)
        await taken_while_stopping(fake, gateway, model, deleted=True)

        model = echo(gated=False)
        gateway = await start_gateway(config, [EditsSeen(fake)], model=model)
        try:
            await fake.push_dm("U1", "last")
            await fake.wait_for(lambda: "re: last" in answers(fake))
            await settled(gateway)
            assert not stored_anywhere(gateway, "hunter2")
        finally:
            await gateway.stop(grace=0)
    assert answers(fake) == ["re: first", "re: last"]
    assert not model_read(model, "hunter2")


async def test_a_message_taken_while_stopping_is_dropped_by_its_deletion_at_the_next_start(tmp_path):
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
    async with FakeSlack() as fake:
        model = echo(gated=True)
        gateway = await start_gateway(config, [EditsSeen(fake)], model=model)
        pasted = await taken_while_stopping(fake, gateway, model, deleted=False)

        held, slack, model = HeldStart(), EditsSeen(fake), echo(gated=False)
        gateway = Gateway(AgentHost(config, model=model), [slack, held])
        starting = asyncio.ensure_future(gateway.start())
        try:
            try:
                await started_slack(fake, gateway, slack)
                await fake.push_deletion(DM, pasted)
                await deletion_acked(fake)
                assert gateway.store.inbox.settled("slack", f"{DM}:{pasted}")
            finally:
                held.go.set()
            await asyncio.wait_for(starting, 10)
            await fake.push_dm("U1", "last")
            await fake.wait_for(lambda: "re: last" in answers(fake))
            await settled(gateway)
            assert not stored_anywhere(gateway, "hunter2")
        finally:
            await gateway.stop(grace=0)
    assert answers(fake) == ["re: first", "re: last"]
    assert not model_read(model, "hunter2")
