"""A ``/stop`` after a completion turn delivered background results whose outcome the store refused (owed,
`gateway.owed_ends`): the results went out, so the stop neither says they will not be delivered nor records
them suppressed; the owed outcome, recorded once the store takes it, says delivered."""

from __future__ import annotations

import sqlite3

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled


def answering(request: ModelRequest) -> dict:
    last = request.messages[-1]
    if last["role"] == "user" and str(last["content"]).startswith("[Background delegation results]"):
        return {"text": "here are the results"}
    if last["role"] == "user" and last["content"] == "go":
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "dig"}}]}
    return {"text": "on it"}


async def test_a_stop_before_a_delivered_completions_owed_outcome_is_recorded_leaves_it_delivered(
        tmp_path, gateways, monkeypatch):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": answering, "leaf": lambda request: {"text": "found it"}})
    gateway = await gateways(make_config(tmp_path), [chat], model=model)
    table = gateway.store.delegations
    settle = table.settle

    def delivered_refused(delegation_id, status, reason=None):
        if status == "delivered":
            raise sqlite3.OperationalError("database or disk is full")
        return settle(delegation_id, status, reason)

    monkeypatch.setattr(table, "settle", delivered_refused)
    await chat.say("go")
    await chat.wait_for(lambda: chat.texts("completion") == ["here are the results"])
    session = gateway.sessions.find(chat.name, "c1", None)
    await chat.wait_for(lambda: bool(session.owed) and not session.busy)
    (delegation_id,) = {end.outcome[0] for end in session.owed if end.outcome is not None}

    await chat.say("/stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    assert chat.texts("command") == ["Nothing was running."]  # before: "… will not be delivered: /agents lists them."
    monkeypatch.undo()
    gateway.runner.pay_owed()
    await settled(gateway)
    assert table.get(delegation_id).status == "delivered"
