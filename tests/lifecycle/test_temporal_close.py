"""The Temporal engine's close keeps to the grace its caller gives: a gateway's stop gives it what is
left of ``server.shutdown_grace_seconds``, not `CLOSE_GRACE_SECONDS` on top of it."""

from __future__ import annotations

import asyncio
import uuid

from temporalio.client import Client
from temporalio.service import RetryConfig

from lifecycle import SubagentLaunchRequest
from lifecycle.settings import TemporalSettings
from lifecycle.temporal import TemporalEngine
from lifecycle.temporal import _engine as temporal_engine
from lifecycle.temporal.testing import DevServer


async def test_a_close_given_a_grace_sends_for_that_long_not_for_the_engines_own(make_env, tmp_path, monkeypatch):
    """Temporal stopped answering before a launch: the close sends the child's workflow start until the
    grace it is given is spent; the journal keeps the job for the next start (test_temporal_launch.py)."""
    monkeypatch.setattr(temporal_engine, "CLOSE_GRACE_SECONDS", 5.0)
    server = DevServer(log_file=tmp_path / "server.log")
    await asyncio.to_thread(server.start)
    try:
        settings = TemporalSettings(address=server.address, task_queue=f"t-{uuid.uuid4().hex[:12]}")
        client = await Client.connect(server.address,
                                      retry_config=RetryConfig(max_retries=1, max_elapsed_time_millis=300))
        env = await make_env(engine=TemporalEngine(settings, client=client))
    finally:
        await asyncio.to_thread(server.stop)
    with env.turn():
        await env.service.launch(SubagentLaunchRequest(goal="launched during an outage"))
    loop = asyncio.get_running_loop()
    began = loop.time()
    await env.service.close(grace=0.3)
    assert loop.time() - began < 2.0  # the grace and the calls it cut short, not the engine's 5 s
