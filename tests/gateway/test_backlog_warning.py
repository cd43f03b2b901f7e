"""The backlog guard's chat warning where a delegation does not cross 25 by one: a backlog the user's
relaunches (``/retry``, ``/agents retry``, which the guard does not refuse) took above it, and a warning
the state database refuses to journal. Driven by a parent (the openai provider against a fake server)."""

from __future__ import annotations

import logging
import sqlite3

from gateway.backlog import BACKLOG_LIMIT, BACKLOG_WARN
from gateway.store import DelegationRow
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.wire import call, is_child, openai_model, parent_requests, tool_results


def delegating(times: int):
    """The parent calls delegate_task ``times`` times in each turn, one task each; children hang."""

    def play(body: dict) -> dict:
        if is_child(body):
            return {"hang": True}
        messages = body["messages"]
        since_user = len(messages) - max(i for i, m in enumerate(messages) if m["role"] == "user") - 1
        if since_user // 2 < times:
            return call("delegate_task", {"goal": f"job {len(messages)}"})
        return {"text": f"dispatched {times}"}

    return play


def relaunched(gateway, session, count: int) -> None:
    """``count`` delegations recorded as the user's relaunches record theirs (`Ledger._relaunch`)."""
    for n in range(count):
        gateway.store.delegations.add(DelegationRow(f"deleg_retry_{n}", session.key, session.session_id,
                                                    f"turn-{n}", 0.0, (), "running"))


def warnings(chat: RecordingAdapter) -> list[str]:
    return [t for t in chat.texts("completion") if t.startswith("⚠️")]


async def test_a_backlog_relaunches_took_above_25_is_warned_at_the_models_next_delegation(tmp_path, llm, gateways):
    server = await llm()
    server.respond_with(delegating(1))
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    await chat.say("delegate one")
    await chat.wait_for(lambda: len(chat.texts("reply")) == 1, timeout=30)
    session = next(iter(gateway.sessions))
    relaunched(gateway, session, BACKLOG_WARN + 1)  # 27 waiting: never at 25 when the model delegated

    server.respond_with(delegating(2))
    await chat.say("delegate two more")
    await chat.wait_for(lambda: len(chat.texts("reply")) == 2, timeout=30)
    assert gateway.store.delegations.count_unsettled(session.key) == BACKLOG_WARN + 4
    # Warned once, by the first of the two: the second finds the chat warned already.
    assert warnings(chat) == ["⚠️ 28 background results are waiting to be delivered in this chat. New background "
                              "work is refused once 50 are waiting; /agents lists them, /stop drops them."]
    await chat.say("/stop")
    await settled(gateway)


async def test_a_warning_the_store_refuses_leaves_the_delegation_dispatched(tmp_path, llm, gateways, monkeypatch,
                                                                            caplog):
    server = await llm()
    server.respond_with(delegating(1))
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    await chat.say("delegate one")
    await chat.wait_for(lambda: len(chat.texts("reply")) == 1, timeout=30)
    session = next(iter(gateway.sessions))
    relaunched(gateway, session, BACKLOG_WARN - 1)  # the next delegation takes the chat to 26
    enqueue = gateway.outbox.enqueue

    def full_disk(*args, key: str, **kwargs):
        if key.endswith(":backlog"):  # the disk filled right after the launch committed
            raise sqlite3.OperationalError("database or disk is full")
        return enqueue(*args, key=key, **kwargs)

    monkeypatch.setattr(gateway.outbox, "enqueue", full_disk)
    caplog.set_level(logging.WARNING, logger="gateway.backlog")
    await chat.say("delegate again")
    await chat.wait_for(lambda: len(chat.texts("reply")) == 2, timeout=30)
    [result] = tool_results(parent_requests(server)[-1])[-1:]
    # Its children run and their results will come: the model must not be told they did not start.
    assert isinstance(result, dict) and result["status"] == "dispatched", result
    assert result["backlog"].startswith("This chat has 26 background results waiting to be delivered")
    assert gateway.store.delegations.count_unsettled(session.key) == BACKLOG_WARN + 1
    assert warnings(chat) == []
    assert "could not be journaled (database or disk is full)" in caplog.text
    await chat.say("/stop")
    await settled(gateway)


async def test_ten_delegations_in_one_answer_at_49_admit_only_one(tmp_path, llm, gateways):
    """A burst does not slip past the limit: the calls of one answer run one after another, each counted
    after the one before it was recorded (a session runs one turn at a time)."""
    server = await llm()
    burst = {"tool_calls": [call("delegate_task", {"goal": f"job {n}"})["tool_calls"][0] for n in range(10)]}
    server.respond_with(lambda body: {"hang": True} if is_child(body) else (
        {"text": "burst sent"} if body["messages"][-1]["role"] == "tool" else burst))
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    await chat.say("ten first")  # all ten dispatched: well below the limit
    await chat.wait_for(lambda: len(chat.texts("reply")) == 1, timeout=30)
    session = next(iter(gateway.sessions))
    assert gateway.store.delegations.count_unsettled(session.key) == 10
    relaunched(gateway, session, BACKLOG_LIMIT - 11)  # 49 waiting

    await chat.say("ten at once")
    await chat.wait_for(lambda: len(chat.texts("reply")) == 2, timeout=30)
    results = tool_results(parent_requests(server)[-1])[-10:]
    assert results[0]["status"] == "dispatched"
    assert all(r.startswith("Error: Refused, no subagent was started: this chat already has 50") for r in results[1:])
    assert gateway.store.delegations.count_unsettled(session.key) == BACKLOG_LIMIT
    await chat.say("/stop")
    await settled(gateway)
