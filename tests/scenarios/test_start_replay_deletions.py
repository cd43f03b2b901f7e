"""At a start, a Slack message its user deletes before the start has queued it: one sent while the gateway was
down that waits behind the older message of its chat the start replays (`gateway.chat_intake.Replays`), or one
that waited for its turn when the last process stopped and that the start replays, not queued again yet. Either
is dropped as a queued one is (`gateway.message_edits`): never answered, never sent to the model, its text kept
nowhere. The real slack-bolt client inside `SlackAdapter` against the loopback `FakeSlack` over Socket Mode; a
later platform's start held until the test lets it go on (`HeldStart`)."""

from __future__ import annotations

import asyncio

from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from tests.scenarios.test_slack_deletions_waiting_elsewhere import deletion_acked, model_read, stored_anywhere
from tests.scenarios.test_slack_edits import waiting
from tests.scenarios.test_start_replay_edits import DM, EditsSeen, HeldStart, echo

SECRET = "my password is hunter2"


async def started_slack(fake: FakeSlack, gateway: Gateway, slack: EditsSeen) -> None:
    """Slack has started and read what came while it was down: the start has replayed nothing yet."""
    await fake.wait_for(lambda: slack._catch_up_run is not None)
    await asyncio.wait_for(asyncio.shield(slack._catch_up_run), 5)


def answers(fake: FakeSlack) -> list[str]:
    return [text for text in fake.texts(DM) if text.startswith("re: ")]


async def test_a_message_waiting_behind_the_replay_is_dropped_when_deleted(tmp_path):
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
    async with FakeSlack() as fake:
        model = echo(gated=True)
        gateway = await start_gateway(config, [EditsSeen(fake)], model=model)
        try:
            await fake.push_dm("U1", "first")
            await model.reached("first")
        finally:
            await gateway.stop(grace=0)  # "first" was in its turn: the next start replays it

        held, slack, model = HeldStart(), EditsSeen(fake), echo(gated=False)
        gateway = Gateway(AgentHost(config, model=model), [slack, held])
        starting = asyncio.ensure_future(gateway.start())
        try:
            try:
                await started_slack(fake, gateway, slack)
                pasted = (await fake.push_dm("U1", SECRET))["event"]["ts"]
                await fake.wait_for(lambda: gateway.store.inbox.arrival("slack", f"{DM}:{pasted}") is not None)
                await fake.push_deletion(DM, pasted)
                await deletion_acked(fake)
                assert gateway.store.inbox.settled("slack", f"{DM}:{pasted}")
            finally:
                held.go.set()
            await asyncio.wait_for(starting, 10)
            await fake.push_dm("U1", "last")
            await fake.wait_for(lambda: len(answers(fake)) == 2)
            await settled(gateway)
            assert not stored_anywhere(gateway, "hunter2")
        finally:
            await gateway.stop(grace=0)
    assert answers(fake) == ["re: first", "re: last"]
    assert not model_read(model, "hunter2")


async def test_a_replayed_message_deleted_before_the_start_queues_it_again_is_dropped(tmp_path):
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}}, display={"busy_input_mode": "queue"})
    async with FakeSlack() as fake:
        model = echo(gated=True)
        gateway = await start_gateway(config, [EditsSeen(fake)], model=model)
        try:
            await fake.push_dm("U1", "first")
            await model.reached("first")
            pasted = (await fake.push_dm("U1", SECRET))["event"]["ts"]
            await fake.wait_for(lambda: waiting(gateway) == 1)
        finally:
            await gateway.stop(grace=0)  # both replayed by the next start, the second waiting for its turn

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
            await fake.wait_for(lambda: len(answers(fake)) == 2)
            await settled(gateway)
            assert not stored_anywhere(gateway, "hunter2")
        finally:
            await gateway.stop(grace=0)
    assert answers(fake) == ["re: first", "re: last"]
    assert not model_read(model, "hunter2")
