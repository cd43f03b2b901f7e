"""Background results outlive the lifecycle journal's retention until they are delivered: a
delegation's first children may finish long before its last one, or before a restart."""

from __future__ import annotations

import pytest

from gateway.testing import settled
from tests.gateway.test_ledger import start

KEPT_AN_INSTANT = {"retention_seconds": 0}
"""Finished children's records are swept as soon as a sweep comes (the tests sweep themselves)."""


def alpha_quick_beta_slow(request):
    if request.metadata["goal"] == "beta":
        return {"wait": "beta", "text": "found beta"}
    return {"text": "found alpha"}


async def alpha_finished_and_swept(chat, model, gateway) -> None:
    """The chat's delegation runs, alpha has finished, beta still works, and a retention sweep
    has come since alpha finished."""
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await model.reached("beta")
    [row] = gateway.store.delegations.running()
    await gateway.host.children.wait_finished([row.tasks[0].subagent_id])
    await gateway.host.lifecycle.sweep()


async def test_a_child_finished_long_before_its_sibling_is_delivered_as_it_ended(tmp_path, gateways):
    chat, model, gateway = await start(gateways, tmp_path, alpha_quick_beta_slow, lifecycle=KEPT_AN_INSTANT)
    await alpha_finished_and_swept(chat, model, gateway)
    model.release("beta")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    await settled(gateway)
    assert chat.texts() == ["on it", "results: alpha"]  # no "⚠️ Subagent failed: alpha: … no longer available"


@pytest.mark.parametrize("on_restart", ["report", "resume"])
async def test_a_child_finished_long_before_a_restart_is_neither_lost_nor_run_again(tmp_path, gateways, on_restart):
    lifecycle = {**KEPT_AN_INSTANT, "on_restart": on_restart}
    chat, model, gateway = await start(gateways, tmp_path, alpha_quick_beta_slow, lifecycle=lifecycle)
    await alpha_finished_and_swept(chat, model, gateway)
    await gateway.stop(grace=0)  # beta is interrupted by the stop

    chat2, model2, gateway2 = await start(gateways, tmp_path, lambda r: {"text": f"again {r.metadata['goal']}"},
                                          lifecycle=lifecycle)
    await chat2.wait_for(lambda: chat2.messages)
    await settled(gateway2)
    assert [r.metadata["goal"] for r in model2.requests if r.role == "leaf"] == (
        ["beta"] if on_restart == "resume" else [])
    [said] = chat2.texts()
    if on_restart == "resume":
        [results] = {str(m["content"]) for r in model2.requests for m in r.messages
                     if str(m.get("content")).startswith("[Background delegation results]")}
        assert "found alpha" in results and "again beta" in results
        assert said == "results: alpha"
    else:
        assert "• Succeeded: alpha — found alpha" in said and "• Interrupted: beta" in said, said
