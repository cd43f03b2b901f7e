"""A subagent's error reaches the parent model masked as a log line is (`gateway.logging.redact`): a failed
model call's provider words, or what the child crashed on, went into delegate_task's result whole, and a
parent model quoting it sent it to the chat (which itself reads only `child_failure_reason`'s masked words)."""

from __future__ import annotations

import json

from agent import ModelRequest
from agent._errors import model_failure_text
from agent.models.scripted import ScriptedModel
from gateway.logging import MASK, register_secret
from gateway.testing import RecordingAdapter, make_config, settled

SECRET = "pt3-child-secret-81d4c2f6"
"""Registered for the whole process: no other test writes it, so masking it hides nothing of theirs."""


def parent(request: ModelRequest) -> dict:
    """Delegates once, then answers with what it read of the result, as a model quoting it does."""
    if request.iteration == 0:
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "look it up"}}]}
    return {"text": f"The subagent said: {request.messages[-1]['content']}"}


def failing_model_call(request: ModelRequest) -> dict:
    return {"error": "server_error",
            "message": model_failure_text("server_error", f"502 from https://proxy.example/v1 (key {SECRET})")}


def crashing_model(request: ModelRequest) -> dict:
    raise RuntimeError(f"proxy refused key {SECRET}")


async def _delegate_result(tmp_path, gateways, leaf) -> tuple[dict, list[str]]:
    """The one entry of delegate_task's result in the parent model's request after the call, and the chat's texts."""
    register_secret(SECRET)
    chat, model = RecordingAdapter(), ScriptedModel({"parent": parent, "leaf": leaf})
    gateway = await gateways(make_config(tmp_path, delegation={"gateway_mode": "inline"}), [chat], model=model)
    await chat.say("have a subagent look it up")
    await chat.wait_for(lambda: any(t.startswith("The subagent said:") for t in chat.texts()))
    await settled(gateway)
    [result] = [m["content"] for r in model.requests if r.role == "parent" and r.iteration == 1
                for m in r.messages if m["role"] == "tool"]
    [entry] = json.loads(result)["results"]
    return entry, chat.texts()


async def test_a_childs_failed_model_call_reaches_the_parent_model_masked(tmp_path, gateways):
    entry, texts = await _delegate_result(tmp_path, gateways, failing_model_call)
    assert entry["status"] == "failed", entry
    # Its kind still leads, where the chat's words for it are read from.
    assert entry["error"] == f"model request failed (server_error): 502 from https://proxy.example/v1 (key {MASK})"
    assert all(SECRET not in t for t in texts), texts


async def test_a_child_that_crashed_reaches_the_parent_model_masked(tmp_path, gateways):
    entry, texts = await _delegate_result(tmp_path, gateways, crashing_model)
    assert entry["status"] == "error" and entry["error"] == f"RuntimeError: proxy refused key {MASK}", entry
    assert all(SECRET not in t for t in texts), texts
