"""A completion turn (background results handed to the model) that keeps failing is tried again a
bounded number of times, then its results go to the chat as they are, once; a turn whose handling
failed has what it delegated dropped, so that its run again does not bring results twice."""

from __future__ import annotations

import contextlib
import sqlite3

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.ledger_failures import FAILED_TURN, UNDELIVERABLE
from gateway.store.delegations import DELIVERY_FAILED
from gateway.testing import RecordingAdapter, make_config, settled
from tests.polling import until

BACKGROUND = {"display": {"interim_assistant_messages": True}}
TASKS = {"tasks": [{"goal": "alpha"}, {"goal": "beta"}]}
RESULTS = "[Background delegation results]"


def parent(completion: dict, asked: list | None = None):
    """Delegates on "delegate", acknowledges, answers results with ``completion`` (counted in ``asked``)."""

    def script(request: ModelRequest) -> dict:
        last = request.messages[-1]
        content = str(last.get("content"))
        if last["role"] == "user" and content.startswith(RESULTS):
            if asked is not None:
                asked.append(content)
            return completion
        if last["role"] == "user" and "delegate" in content:
            return {"tool_calls": [{"name": "delegate_task", "arguments": TASKS}]}
        if last["role"] == "tool":
            return {"text": "on it"}
        return {"text": f"echo {content}"}

    return script


def found(request: ModelRequest) -> dict:
    return {"text": f"found {request.metadata['goal']}"}


def died(tmp_path) -> None:
    """Leave the state as a gateway killed mid-run leaves it: not marked as stopped cleanly."""
    with contextlib.closing(sqlite3.connect(tmp_path / "state" / "switchboard.db")) as db, db:
        db.execute("UPDATE gateway_meta SET value='0' WHERE key='stopped_cleanly'")


def break_replies(gateway, kind: str, times: int | None = None):
    """The gateway's own handling of a turn's reply of ``kind`` raises (a bug meets an odd turn)."""
    enqueue_long, broken = gateway.outbox.enqueue_long, []

    async def failing(*args, **kw):
        if kw["key"].endswith(f":{kind}") and (times is None or len(broken) < times):  # a reply's, not results
            broken.append(kw.get("turn_id"))
            raise RuntimeError("a bug met this turn")
        return await enqueue_long(*args, **kw)

    gateway.outbox.enqueue_long = failing
    return broken


async def test_a_completion_turn_that_keeps_failing_is_tried_again_then_its_results_go_out_as_they_are(
        tmp_path, gateways):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    asked: list[str] = []
    model = ScriptedModel({"parent": parent({"text": "never sent"}, asked), "leaf": found})
    gateway = await gateways(make_config(tmp_path, **BACKGROUND, inbox={"max_attempts": 3}), [chat], model=model,
                             clock=clock)
    break_replies(gateway, "completion")
    await chat.say("please delegate")
    for pause in (0.5, 1.0):  # tried again after a pause that doubles, as a message's turn is
        await clock.until_sleeping(lasting=pause)
        clock.advance(pause)
    await chat.wait_for(lambda: len(chat.messages) == 2)
    await settled(gateway)
    ack, results = chat.texts()
    assert ack == "on it"
    assert results.startswith(UNDELIVERABLE) and "found alpha" in results and "found beta" in results
    assert len(asked) == 3
    assert gateway.store.delegations.running() == []
    [row] = gateway.store.delegations.latest(gateway.sessions.get("chat", "c1", None).session_id, 5)
    assert (row.status, row.reason) == ("delivered", DELIVERY_FAILED)
    await chat.say("/agents")
    await chat.wait_for(lambda: len(chat.messages) == 3)
    assert "results sent as they were" in chat.texts()[2]


async def test_a_completion_turn_the_gateway_dies_in_is_not_replayed_into_every_start(tmp_path, gateways):
    config = make_config(tmp_path, **BACKGROUND, inbox={"max_attempts": 2})

    async def run_until_the_completion_turn(say: bool = False) -> None:
        chat = RecordingAdapter()
        model = ScriptedModel({"parent": parent({"wait": "brings it down"}), "leaf": found})
        gateway = await gateways(config, [chat], model=model)
        if say:
            await chat.say("please delegate")
        await model.reached("brings it down")
        await gateway.stop(grace=0)
        died(tmp_path)

    await run_until_the_completion_turn(say=True)
    await run_until_the_completion_turn()  # after the first death: attempt 1 of 2, delivered again
    chat = RecordingAdapter()
    asked: list[str] = []
    model = ScriptedModel({"parent": parent({"text": "never asked"}, asked), "leaf": found})
    gateway = await gateways(config, [chat], model=model)
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    [results] = chat.texts()
    assert results.startswith(UNDELIVERABLE) and "found alpha" in results and "found beta" in results
    assert asked == []
    assert gateway.store.delegations.running() == []
    await gateway.stop(grace=0)

    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], model=ScriptedModel({"parent": parent({"text": "x"}), "leaf": found}))
    await settled(gateway2)
    assert chat2.messages == []  # sent once


async def test_a_turn_whose_handling_failed_after_it_delegated_brings_its_results_once(tmp_path, gateways):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    asked: list[str] = []
    child = {"wait": "child works", "text": "found"}
    model = ScriptedModel({"parent": parent({"text": "results are in"}, asked), "leaf": lambda r: child})
    gateway = await gateways(make_config(tmp_path, **BACKGROUND), [chat], model=model, clock=clock)
    broken = break_replies(gateway, "reply", times=1)
    await chat.say("please delegate")
    await clock.until_sleeping(lasting=0.5)  # the message is tried again after a pause
    assert len(broken) == 1
    [first] = gateway.store.delegations.of_turn(broken[0])
    assert (first.status, first.reason) == ("suppressed", FAILED_TURN)
    await until(lambda: not gateway.host.children.children(first.agent_session_id))  # its children stopped
    clock.advance(0.5)
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    model.release("child works")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    await settled(gateway)
    assert chat.texts() == ["on it", "results are in"]
    assert len(asked) == 1
