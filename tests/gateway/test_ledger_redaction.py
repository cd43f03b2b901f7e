"""The ledger's own chat messages mask configured secrets as ``/agents`` does, before they cut: the
restart report (children a restart interrupted) and the results sent as they are (a completion turn
that failed too often) show goals the model wrote and summaries that may quote what a tool echoed."""

from __future__ import annotations

import asyncio

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.ledger_failures import RESULT_CHARS, UNDELIVERABLE
from gateway.logging import MASK, register_secret
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_completion_failures import break_replies
from tests.gateway.test_ledger import BACKGROUND

SECRET = "x2-ledger-secret-7d41b0c3e8"
"""Registered for the whole process: no other test writes it, so masking it hides nothing of theirs."""
GOALS = [f"use {SECRET} to log in", "plain"]


def delegating(request: ModelRequest) -> dict:
    last = request.messages[-1]
    content = str(last.get("content"))
    if last["role"] == "user" and content.startswith("[Background delegation results]"):
        return {"text": "never sent"}
    if last["role"] == "user" and "delegate" in content:
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": g} for g in GOALS]}}]}
    return {"text": "on it"}


def straddling(limit: int) -> str:
    """A text whose secret straddles a cut at ``limit``: masked after the cut, its first half shows."""
    return "x" * (limit - 12) + f" {SECRET} and the rest of the answer"


async def test_the_restart_report_masks_secrets_in_goals_and_partial_output(tmp_path, gateways):
    register_secret(SECRET)
    config = make_config(tmp_path, **BACKGROUND)

    def leaf(request: ModelRequest) -> dict:
        if request.iteration == 0:
            return {"text": straddling(200), "tool_calls": [{"name": "list_files"}]}
        return {"wait": "forever"}

    chat, model = RecordingAdapter(), ScriptedModel({"parent": delegating, "leaf": leaf})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    async with asyncio.timeout(5):
        for _ in range(2):
            await model.reached("forever")
    await gateway.stop(grace=0)

    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], model=ScriptedModel({"parent": delegating, "leaf": leaf}))
    await chat2.wait_for(lambda: chat2.messages)
    await settled(gateway2)
    [report] = chat2.texts()
    assert report.startswith("⚠️ The gateway restarted"), report
    assert SECRET[:8] not in report, report
    assert f"Interrupted: use {MASK} to log in — partial output: x" in report
    assert f"x {MASK} and th" in report


async def test_results_sent_as_they_are_mask_secrets_in_goals_and_summaries(tmp_path, gateways):
    register_secret(SECRET)
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": delegating, "leaf": lambda request: {"text": straddling(RESULT_CHARS)}})
    gateway = await gateways(make_config(tmp_path, **BACKGROUND, inbox={"max_attempts": 1}), [chat], model=model)
    break_replies(gateway, "completion")
    await chat.say("please delegate")
    await chat.wait_for(lambda: len(chat.messages) >= 2)
    await settled(gateway)
    results = "".join(chat.texts()[1:])  # split to the platform's limit
    assert results.startswith(UNDELIVERABLE), results
    assert SECRET[:8] not in results, results
    assert f"Succeeded: use {MASK} to log in — x" in results
    assert f"x {MASK} and th" in results
