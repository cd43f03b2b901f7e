"""Another process takes the state database's write lock (an sqlite3 shell's BEGIN IMMEDIATE) while a turn runs:
its model answers while nothing can be journaled. The chat gets the answer once, never twice: its reply is owed,
kept in memory, and journaled once the lock is free (`gateway.owed_ends`), and a restart before then runs the turn
again with nothing of it sent. A real gateway on a real state directory."""

from __future__ import annotations

import contextlib
import sqlite3

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.idle_owed_ends import PAY_AGAIN_FIRST
from gateway.testing import RecordingAdapter, make_config, settled

BUSY_TIMEOUT = 0.1  # the store's 5 s, shortened


async def held_as_the_model_answers(gateway, model: ScriptedModel) -> sqlite3.Connection:
    """Once the turn's model call waits at its gate, take the write lock in another connection, then let it answer."""
    db = gateway.store.db
    db.busy_timeout = BUSY_TIMEOUT
    db.read(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
    await model.reached("answer")
    await db.durable()  # no batch of the gateway's open: the lock is free to take
    other = sqlite3.connect(db.path, isolation_level=None, timeout=0)
    other.execute("BEGIN IMMEDIATE")
    model.release("answer")
    return other


def counting(asked: list[str], *steps):
    def parent(request) -> dict:
        asked.append(request.messages[-1]["content"])
        step = steps[request.iteration]
        return step(request) if callable(step) else step
    return parent


async def test_an_answer_while_the_lock_is_held_goes_out_once_when_it_is_free(tmp_path, gateways):
    asked: list[str] = []
    model = ScriptedModel({"parent": counting(asked, {"wait": "answer", "text": "the answer"})})
    chat, clock, config = RecordingAdapter(), FakeClock(autojump=False), make_config(tmp_path)
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("hello", event_id="e1")
    other = await held_as_the_model_answers(gateway, model)
    await clock.until_sleeping(lasting=PAY_AGAIN_FIRST)  # the turn is over, its end owed
    assert chat.texts() == [] and not gateway.store.inbox.settled("chat", "e1")
    other.execute("ROLLBACK")
    other.close()
    clock.advance(PAY_AGAIN_FIRST)
    await chat.wait_for(lambda: chat.texts())
    await settled(gateway)
    assert chat.texts() == ["the answer"]
    assert gateway.store.inbox.settled("chat", "e1")
    await gateway.stop(grace=0)

    gateway = await gateways(config, [chat], model=model, clock=clock)  # nothing runs again
    await settled(gateway)
    assert chat.texts() == ["the answer"] and asked == ["hello"]


async def test_a_restart_before_the_lock_is_free_runs_the_turn_again_with_nothing_sent_twice(tmp_path, gateways):
    asked: list[str] = []
    model = ScriptedModel({"parent": counting(asked, {"wait": "answer", "text": "the answer"})})
    chat, clock, config = RecordingAdapter(), FakeClock(autojump=False), make_config(tmp_path)
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("hello", event_id="e1")
    other = await held_as_the_model_answers(gateway, model)
    await clock.until_sleeping(lasting=PAY_AGAIN_FIRST)
    with contextlib.suppress(sqlite3.OperationalError):  # nor can the stop record that it stopped cleanly
        await gateway.stop(grace=0)
    assert chat.texts() == []
    other.execute("ROLLBACK")
    other.close()

    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.wait_for(lambda: chat.texts())
    await settled(gateway)
    assert chat.texts() == ["the answer"] and asked == ["hello", "hello"]
    assert gateway.store.inbox.settled("chat", "e1")

