"""A gateway that closes while Temporal is down, with a child launched and stopped during the outage: the
close starts the workflows of children Temporal may not have yet, but not this one's. Started there, only
for the stop to cancel it, a worker could take it first, build it and call the model."""

from __future__ import annotations

import asyncio
import uuid

from temporalio.client import Client
from temporalio.service import RetryConfig

from lifecycle import SubagentLaunchRequest, SubagentState
from lifecycle.settings import TemporalSettings
from lifecycle.temporal import TemporalEngine
from lifecycle.temporal.testing import DevServer
from tests.lifecycle.test_temporal_launch import no_workflow
from tests.polling import until

S = SubagentState


async def test_a_child_stopped_during_an_outage_is_not_started_by_the_close(make_env, tmp_path, caplog):
    server = DevServer(db_file=tmp_path / "temporal.db", log_file=tmp_path / "server.log")
    await asyncio.to_thread(server.start)
    try:
        settings = TemporalSettings(address=server.address, task_queue=f"t-{uuid.uuid4().hex[:12]}")
        client = await Client.connect(server.address,
                                      retry_config=RetryConfig(max_retries=1, max_elapsed_time_millis=300))
        env = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
        await asyncio.to_thread(server.stop)
        with env.turn():
            handle = await env.service.launch(SubagentLaunchRequest(goal="launched during an outage"))
            await until(lambda: any("following it again" in r.getMessage() for r in caplog.records))
            assert (await env.service.cancel(handle, reason="changed my mind")).accepted
        # Temporal comes back within the close's grace: what the close still sends reaches it.
        closing = asyncio.ensure_future(env.service.close(grace=60))
        await asyncio.to_thread(server.start)
        await asyncio.wait_for(closing, 40)
        assert await no_workflow(client, handle.subagent_id)

        second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
        with second.turn():
            assert (await second.service.wait(handle, timeout_seconds=20)).state is S.CANCELLED
            result = await second.service.result(handle)
        assert result.error_message == "cancelled before start: changed my mind"
        assert await no_workflow(client, handle.subagent_id)
    finally:
        await asyncio.to_thread(server.stop)
