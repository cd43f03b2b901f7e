"""`sessions.retention_days`: the retention sweep forgets the stored sessions no turn was taken in (nor command
sent) for that long, transcript and all, a batch at a time, and none a chat may still need; unset, it keeps every
one, as before."""

from __future__ import annotations

import json

import pytest

from agent import AgentSession
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.retention import Retention
from gateway.session_registry import SessionRegistry
from gateway.store import GatewayStore, NewMessage, SessionRow, session_key
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import Inbound

DAY = 24 * 3600.0
KEPT_FOR = 30 * DAY
TALK = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]


class Children:
    """The lifecycle's view of live children (`lifecycle.HostView`): the agent sessions some still work for."""

    def __init__(self, *parents: str) -> None:
        self.parents = parents

    def children(self, session_id):
        return []

    def sessions_with_children(self):
        return self.parents


@pytest.fixture
def clock():
    return FakeClock(start=1_800_000_000.0)


@pytest.fixture
def store(tmp_path, clock):
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    yield store
    store.close()


def registry_on(store, clock):
    def new_agent(session_id, mode, chat, backend):
        return AgentSession(model=ScriptedModel({}), tools={}, session_id=session_id)

    return SessionRegistry(store.sessions, new_agent=new_agent, mode_for=lambda platform: "inline", clock=clock,
                           ended=lambda *a: None)


def stored(store, clock, chat: str, days_ago: float, messages: int = 2) -> str:
    """A session of ``chat`` (on `telegram`) whose last turn was ``days_ago``, with a conversation of ``messages``."""
    key = session_key("telegram", chat, None)
    now = clock.now
    clock.now = now - days_ago * DAY
    try:
        talk = [TALK[n % 2] for n in range(messages)]
        store.sessions.save(SessionRow(key, f"s-{chat}", 1, "inline", talk))
    finally:
        clock.now = now
    return key


def event(chat: str, event_id: str) -> Inbound:
    return Inbound("telegram", chat, None, "u1", "Ann", "hi", event_id)


def old_and_kept(store, clock, registry) -> tuple[set[str], set[str]]:
    """(keys the sweep forgets, keys it keeps): sessions whose last turn was long ago, beside one recent and, older
    still (a batch must go past them), one for each reason to keep a session however old."""
    forgotten = {stored(store, clock, f"old-{n}", 40 + n) for n in range(5)}
    # Long over with: a delegation delivered, an event handled, a message sent.
    settled_chat = stored(store, clock, "settled", 45)
    forgotten.add(settled_chat)
    store.db.write("INSERT INTO gateway_delegations (delegation_id, session_key, agent_session_id, origin_turn_id,"
                   " dispatched_at, tasks, status, settled_at) VALUES ('d-done', ?, 's-settled', 't', 0, '[]',"
                   " 'delivered', 0)", (settled_chat,))
    store.inbox.accept(event("settled", "e-done"), "t-1")
    store.inbox.settle("telegram", "e-done")
    [sent] = store.outbox.add_messages([NewMessage("m-done", "telegram", "settled", None, "an old answer")])
    store.outbox.mark_sent(sent, "42")

    kept = {stored(store, clock, "recent", 29)}
    kept.add(stored(store, clock, "in-memory", 50))
    registry.get("telegram", "in-memory", None)
    kept.add(delegating := stored(store, clock, "delegating", 50))
    store.db.write("INSERT INTO gateway_delegations (delegation_id, session_key, agent_session_id, origin_turn_id,"
                   " dispatched_at, tasks, status) VALUES ('d-running', ?, 's-delegating', 't', 0, '[]', 'running')",
                   (delegating,))
    kept.add(stored(store, clock, "child", 50))  # its agent session: `Children("s-child")`
    kept.add(holding := stored(store, clock, "holding", 50))
    store.sessions.hold(registry.run, holding, json.dumps({"n": 1}))
    kept.add(stored(store, clock, "waiting", 50))
    store.inbox.accept(event("waiting", "e-waiting"), "t-2")
    kept.add(stored(store, clock, "sending", 50))
    store.outbox.add_messages([NewMessage("m-owed", "telegram", "sending", None, "not sent yet")])
    return forgotten, kept


def sessions_and_transcripts(store) -> tuple[set[str], set[str]]:
    return ({key for (key,) in store.db.read("SELECT key FROM gateway_sessions")},
            {key for (key,) in store.db.read("SELECT DISTINCT key FROM gateway_transcript")})


@pytest.mark.parametrize(("sweep", "batch"), [("sweep", 1), ("sweep", 1000), ("sweep_in_batches", 1),
                                              ("sweep_in_batches", 4)])
async def test_the_sessions_no_turn_was_taken_in_for_the_setting_are_forgotten_and_none_a_chat_still_needs(
        store, clock, sweep, batch):
    registry = registry_on(store, clock)
    forgotten, kept = old_and_kept(store, clock, registry)
    retention = Retention(store, registry, Children("s-child"), clock=clock, pay_owed=lambda: None, batch=batch,
                          forget_sessions_after=KEPT_FOR)

    result = getattr(retention, sweep)()
    await result if sweep == "sweep_in_batches" else None
    assert sessions_and_transcripts(store) == (kept, kept)
    assert forgotten.isdisjoint(sessions_and_transcripts(store)[0])


async def test_with_the_setting_off_every_session_is_kept(store, clock):
    registry = registry_on(store, clock)
    forgotten, kept = old_and_kept(store, clock, registry)
    stored(store, clock, "ancient", 3650)
    before = sessions_and_transcripts(store)
    retention = Retention(store, registry, Children("s-child"), clock=clock, pay_owed=lambda: None)
    assert retention.forget_sessions_after == 0
    await retention.sweep_in_batches()
    assert sessions_and_transcripts(store) == before and len(before[0]) == len(forgotten | kept) + 1


def test_a_batch_holds_as_many_sessions_as_its_rows_allow_and_one_at_least(store, clock):
    for n in range(6):
        stored(store, clock, f"short-{n}", 40 + n, messages=3)  # 4 rows each, the session's own with its 3
    stored(store, clock, "long", 100, messages=30)  # the oldest
    before = clock.now - KEPT_FOR
    assert store.sessions.forget(before, (), (), 10) == (1, True)  # the long one alone: 31 rows
    assert store.sessions.forget(before, (), (), 10) == (2, True)  # 8 rows: a third would make 12
    assert store.sessions.forget(before, (), (), 10) == (2, True)
    assert store.sessions.forget(before, (), (), 10) == (2, False)
    assert sessions_and_transcripts(store) == (set(), set())


async def test_a_chat_whose_session_was_forgotten_starts_anew_as_after_new(tmp_path, gateways):
    clock = FakeClock(autojump=False)
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": lambda request: {"text": f"re: {request.messages[-1]['content']}"}})
    gateway = await gateways(make_config(tmp_path), [chat], model=model, clock=clock)
    gateway.retention.forget_sessions_after = KEPT_FOR  # as `sessions.retention_days: 30` has it
    await chat.say("my number is 42")
    await chat.wait_for(lambda: chat.texts() == ["re: my number is 42"])
    await settled(gateway)
    key = session_key("chat", "c1", None)
    first = gateway.store.sessions.load(key)

    clock.advance(KEPT_FOR - DAY)
    await gateway.retention.sweep_in_batches()  # the session leaves memory, idle for an hour and more
    await gateway.retention.sweep_in_batches()
    assert key not in gateway.sessions and gateway.store.sessions.load(key) is not None  # within the 30 days
    clock.advance(2 * DAY)
    await gateway.retention.sweep_in_batches()
    assert gateway.store.sessions.load(key) is None

    await chat.say("what is my number?")
    await chat.wait_for(lambda: len(chat.texts()) == 2)
    assert chat.texts()[1] == "re: what is my number?"
    seen = [m.get("content") for m in model.requests[-1].messages if m["role"] == "user"]
    assert seen == ["what is my number?"]  # nothing of the conversation before
    again = gateway.store.sessions.load(key)
    assert again.session_id != first.session_id and again.generation == 1


async def test_a_chat_using_its_session_through_commands_alone_keeps_it(tmp_path, gateways):
    # A member running /agents now and then is no abandoned chat: the command counts as the session's activity, as
    # a turn does (before, a session used through commands alone was forgotten 30 days after its last turn).
    clock = FakeClock(autojump=False)
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": lambda request: {"text": f"re: {request.messages[-1]['content']}"}})
    gateway = await gateways(make_config(tmp_path), [chat], model=model, clock=clock)
    gateway.retention.forget_sessions_after = KEPT_FOR
    await chat.say("my number is 42")
    await chat.wait_for(lambda: chat.texts() == ["re: my number is 42"])
    await settled(gateway)
    key = session_key("chat", "c1", None)
    first = gateway.store.sessions.load(key)

    clock.jump(KEPT_FOR - DAY)
    await chat.say("/agents")
    await chat.wait_for(lambda: len(chat.texts()) == 2)
    await settled(gateway)
    clock.jump(2 * DAY)  # past 30 days since the turn, not since the command
    await gateway.retention.sweep_in_batches()  # the session leaves memory, idle for an hour and more
    await gateway.retention.sweep_in_batches()
    assert key not in gateway.sessions
    assert gateway.store.sessions.load(key).session_id == first.session_id
