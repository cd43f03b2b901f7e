"""A session holds at most `QUEUED` turns in memory: a chat's messages beyond them wait in the store, in
order, read back as turns begin; a stop drops or keeps them as it does those in memory; a restart's
registry ignores what an earlier process held, and a retention sweep forgets it."""

from __future__ import annotations

import pytest

from agent import AgentSession
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway import session_registry
from gateway.retention import Retention
from gateway.session_registry import QUEUED, SessionRegistry
from gateway.sessions import WorkItem
from gateway.store import GatewayStore
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import Attachment, Inbound

SENT = QUEUED * 2 + 7


class Children:
    def children(self, session_id):
        return []


def new_agent(session_id, mode, chat, backend):
    return AgentSession(model=ScriptedModel({}), tools={}, session_id=session_id)


def registry_on(store, ended=lambda *a: None):
    return SessionRegistry(store.sessions, new_agent=new_agent, mode_for=lambda platform: "inline",
                           clock=FakeClock(), ended=ended)


def message(n: int, user: str = "u1") -> Inbound:
    files = (Attachment("image", f"{n}.png", "image/png", 10, f"file-{n}"),) if n % 50 == 3 else ()
    return Inbound("telegram", "c", None, user, None, f"msg {n} — ünïcode", f"e{n}", attachments=files,
                   is_private=False, sent_at=1000.0 + n, message_id=str(n))


@pytest.fixture
def store(tmp_path):
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    yield store
    store.close()


def flood(registry, sent=SENT, user=lambda n: "u1"):
    """A turn runs while the chat sends ``sent`` messages."""
    session = registry.get("telegram", "c", None)
    registry.enqueue(session, WorkItem("message", "first", "t-first", message(-1)))
    registry.begin(session)
    for n in range(sent):
        registry.enqueue(session, WorkItem("message", f"text {n}", f"t-{n}", message(n, user(n))))
    return session


def drain(registry, session):
    taken = []
    registry.end(session)
    while (begun := registry.begin(session)) is not None:
        assert len(session.queue) < QUEUED
        taken.append(begun[0])
        registry.end(session)
    return taken


def test_messages_beyond_the_bound_wait_in_the_store_and_all_run_in_the_order_sent(store):
    registry = registry_on(store)
    session = flood(registry)
    assert len(session.queue) == QUEUED and session.held == SENT - QUEUED
    assert session.busy
    assert registry.evict_idle(0.0, lambda sid: False) == 0
    taken = drain(registry, session)
    assert [item.turn_id for item in taken] == [f"t-{n}" for n in range(SENT)]
    assert [item.text for item in taken] == [f"text {n}" for n in range(SENT)]
    assert [item.event for item in taken] == [message(n) for n in range(SENT)]  # files and all, read back whole
    assert session.held == 0 and not session.busy
    assert store.sessions.held(registry.run, session.key) == []


def test_a_stop_drops_the_held_messages_it_picks_and_keeps_the_others_in_order(store):
    ended = []
    registry = registry_on(store, ended=lambda session, why, stopped, waiting: ended.extend(waiting))
    session = flood(registry, user=lambda n: "u1" if n % 2 else "u2")
    stopped = registry.stop(session, "stop", drops=lambda event: event.user_id == "u1")
    odd = [n for n in range(SENT) if n % 2]
    even = [n for n in range(SENT) if not n % 2]
    assert stopped.dropped == len(odd) == len(ended)
    assert [turn_id for turn_id, _ in ended] == [f"t-{n}" for n in odd]
    assert [event.event_id for event in stopped.kept] == [f"e{n}" for n in even]
    taken = drain(registry, session)
    assert [item.turn_id for item in taken] == [f"t-{n}" for n in even]


def test_a_stop_that_drops_everything_in_memory_still_runs_the_held_messages_it_keeps(store):
    registry = registry_on(store)
    session = flood(registry, user=lambda n: "u1" if n < QUEUED else "u2")
    stopped = registry.stop(session, "stop", drops=lambda event: event.user_id == "u1")
    assert stopped.dropped == QUEUED and not session.queue and session.held == SENT - QUEUED
    taken = drain(registry, session)
    assert [item.turn_id for item in taken] == [f"t-{n}" for n in range(QUEUED, SENT)]


def test_what_an_earlier_process_held_is_ignored_and_then_forgotten_by_a_sweep(store):
    earlier = registry_on(store)
    flood(earlier)
    # The restart hands every unsettled event over anew, from the inbox: the earlier rows are not run twice.
    registry = registry_on(store)
    session = flood(registry, sent=3)
    assert [item.turn_id for item in drain(registry, session)] == ["t-0", "t-1", "t-2"]
    retention = Retention(store, registry, Children(), clock=FakeClock(), pay_owed=lambda: None, batch=40)
    retention.sweep()
    assert store.db.read("SELECT COUNT(*) FROM gateway_held")[0][0] == 0


def echoing(gate_first: bool):
    """A parent model answering each message with its text; with ``gate_first`` its first turn waits at ``first``."""

    def step(request):
        text = request.messages[-1]["content"]
        if gate_first and request.turn_index == 0:
            return {"wait": "first", "text": f"re: {text}"}
        return {"text": f"re: {text}"}

    return ScriptedModel({"parent": step})


async def test_a_chat_flooding_a_queued_turn_gets_every_answer_once_in_order_across_a_restart(
        tmp_path, gateways, monkeypatch):
    monkeypatch.setattr(session_registry, "QUEUED", 3)
    config = make_config(tmp_path, display={"busy_input_mode": "queue"})
    chat, model = RecordingAdapter(), echoing(gate_first=True)
    gateway = await gateways(config, [chat], model=model)
    await chat.say("m0")
    await model.reached("first")
    for n in range(1, 10):
        await chat.say(f"m{n}")
    session = gateway.sessions.find(chat.name, "c1", None)
    assert (len(session.queue), session.held) == (3, 6)
    await gateway.stop(grace=0)  # the first turn, cut short, and the nine waiting run after the start

    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], model=echoing(gate_first=False))
    await chat2.wait_for(lambda: len(chat2.texts("reply")) == 10)
    await settled(gateway2)
    assert chat2.texts("reply") == [f"re: m{n}" for n in range(10)]
    assert gateway2.store.db.read("SELECT COUNT(*) FROM gateway_held WHERE run = ?", (gateway2.sessions.run,)) \
        == [(0,)]


async def test_a_chat_flooding_a_queued_turn_gets_every_answer_once_in_order(tmp_path, gateways, monkeypatch):
    monkeypatch.setattr(session_registry, "QUEUED", 3)
    chat, model = RecordingAdapter(), echoing(gate_first=True)
    gateway = await gateways(make_config(tmp_path, display={"busy_input_mode": "queue"}), [chat], model=model)
    await chat.say("m0")
    await model.reached("first")
    for n in range(1, 10):
        await chat.say(f"m{n}")
    model.release("first")
    await chat.wait_for(lambda: len(chat.texts("reply")) == 10)
    await settled(gateway)
    assert chat.texts("reply") == [f"re: m{n}" for n in range(10)]
    assert gateway.store.inbox.unfinished() == []
