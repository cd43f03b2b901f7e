"""A Slack message the gateway takes while it stops (its stop has begun, the adapter still hands events over: the
message is recorded for the next start, in no queue) that its user edits in that same window: the next start answers
it as edited, as it does a message waiting in its session's queue (`gateway.message_edits`), unless the edit makes it
a command (answered as written). Slack, told the edit was taken, sends it no more. The real slack-bolt client inside
`SlackAdapter` against the loopback `FakeSlack` over Socket Mode; the gateway's stop held after it stopped taking
events (`held_stop`)."""

from __future__ import annotations

import pytest

from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from tests.scenarios.test_deletion_of_message_taken_while_stopping import held_stop
from tests.scenarios.test_slack_edits import acked
from tests.scenarios.test_start_replay_deletions import answers
from tests.scenarios.test_start_replay_edits import DM, EditsSeen, echo


@pytest.mark.parametrize(("edit", "answered"), [("deploy to staging", "re: deploy to staging"),
                                                ("!stop", "re: deploy to prod")])
async def test_a_message_taken_while_stopping_is_answered_as_edited_in_that_window(tmp_path, edit, answered):
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
    async with FakeSlack() as fake:
        model = echo(gated=True)
        gateway = await start_gateway(config, [EditsSeen(fake)], model=model)
        await fake.push_dm("U1", "first")
        await model.reached("first")
        async with held_stop(gateway):
            sent = (await fake.push_dm("U1", "deploy to prod"))["event"]["ts"]
            await acked(fake)
            assert gateway.store.inbox.arrival("slack", f"{DM}:{sent}") is not None  # taken, for the next start
            await fake.push_edit(DM, sent, edit)
            await acked(fake)  # Slack will not send it again

        gateway = await start_gateway(config, [EditsSeen(fake)], model=echo(gated=False))
        try:
            await fake.wait_for(lambda: len(answers(fake)) == 2)
            await settled(gateway)
        finally:
            await gateway.stop(grace=0)
    assert answers(fake) == ["re: first", answered]
