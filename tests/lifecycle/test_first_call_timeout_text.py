"""A child idle past its cap while in its first model call is told so: its error said it "never reached its first
model request", sending whoever read it to look for a child that never started."""

import asyncio
import json

from lifecycle.settings import DelegationSettings
from tests.lifecycle.test_delegate import ManualClock, delegate


async def test_a_child_stuck_in_its_first_model_call_times_out_saying_that_call_had_no_answer(make_env):
    clock = ManualClock()
    settings = DelegationSettings(child_timeout_seconds=30, heartbeat_interval_seconds=1)
    env = await make_env(delegate=True, delegation=settings, clock=clock)
    called = asyncio.Event()

    def script(request):
        called.set()
        return {"hang": True}

    env.child_model.script["leaf"] = script
    task = asyncio.create_task(delegate(env, {"goal": "hangs in its first call"}))
    await asyncio.wait_for(called.wait(), 5)
    await clock.advance(35)
    entry = json.loads(await asyncio.wait_for(task, 5))["results"][0]
    assert (entry["status"], entry["timeout_phase"]) == ("timeout", "before_first_llm_call")
    assert entry["error"] == ("Subagent timed out after 30s idle with 0 API call(s) completed — its first model "
                              "request had no answer in that window.")
