"""Property: in a group with ``busy_input_mode: steer``, whatever members send, steer, stop and the store holds
(`QUEUED`), each message is answered once (a turn of its own, or read by the turn it was steered into) or dropped
by a stop, and the turns begin in the order their messages came (`SessionRegistry.end`, `_put_back`)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent import AgentSession
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway import session_registry
from gateway.session_registry import SessionRegistry
from gateway.sessions import WorkItem
from gateway.store import GatewayStore
from platforms.base import Inbound

USERS = ("u1", "u2", "u3")
OPS = st.lists(st.one_of(st.tuples(st.just("say"), st.sampled_from(USERS)),
                         st.tuples(st.just("hold"), st.sampled_from(USERS)),
                         st.tuples(st.sampled_from(("complete", "read", "end", "take_held")), st.none()),
                         st.tuples(st.just("stop"), st.sampled_from(USERS))), max_size=40)


def new_agent(session_id, mode, chat, backend):
    return AgentSession(model=ScriptedModel({}), tools={}, session_id=session_id)


class Chat:
    """The registry driven as the gateway drives it for a group, with what became of each message."""

    def __init__(self, store: GatewayStore, chat_id: str) -> None:
        self.chat_id = chat_id
        self.dropped: list[str] = []
        self.registry = SessionRegistry(store.sessions, new_agent=new_agent, mode_for=lambda platform: "inline",
                                        clock=FakeClock(), ended=self._ended)
        self.session = self.registry.get("telegram", chat_id, None)
        self.sent: dict[str, int] = {}
        self.begun: list[str] = []
        self.read: list[str] = []
        self.unread: list[str] = []  # steered into the running turn, in the agent's order
        self.steers_read: list[str] = []  # of those, the ones the running turn read

    def _ended(self, session, why, stopped, waiting) -> None:
        self.dropped += [event.event_id for _, event in waiting]

    def _message(self, user: str) -> tuple[Inbound, str]:
        key = f"e{len(self.sent)}"
        self.sent[key] = len(self.sent)
        return Inbound("telegram", self.chat_id, None, user, None, key, key, is_private=False, message_id=key), key

    def say(self, user: str) -> None:
        inbound, key = self._message(user)
        running = self.session.running
        if running is not None and not running.suppressed and running.kind == "message" and running.event is not None \
                and running.event.user_id == user and not self.registry.waits_from(self.session, user):
            self.registry.steer(self.session, inbound, running.turn_id)
            self.unread.append(key)
        else:
            self.registry.enqueue(self.session, WorkItem("message", key, f"t-{key}", inbound))

    def hold(self, user: str) -> None:
        """A replayed turn holds the message for the question it may ask again (`Questions.hold`)."""
        running = self.session.running
        if running is None or running.suppressed or running.held_answer is not None:
            return self.say(user)
        inbound, key = self._message(user)
        running.held_answer = WorkItem("message", key, f"t-{key}", inbound)

    def take_held(self) -> None:
        running = self.session.running
        if running is not None and running.held_answer is not None and not running.suppressed:
            self.read.append(running.held_answer.event.event_id)
            running.held_answer = None

    def complete(self) -> None:
        key = f"d{len(self.sent)}"
        self.sent[key] = len(self.sent)
        self.registry.enqueue(self.session, WorkItem("completion", key, f"t-{key}", delegation_id=key))

    def read_one(self) -> None:
        if self.session.running is not None and self.session.agent._steer:
            self.session.agent._steer.pop(0)
            self.steers_read.append(self.unread.pop(0))
            self.read.append(self.steers_read[-1])

    def end(self) -> None:
        if self.session.running is not None:
            read = self.registry.end(self.session)
            self.unread.clear()
            assert [event.event_id for event in read] == self.steers_read
        self.steers_read = []
        begun = self.registry.begin(self.session)
        if begun is not None:
            item = begun[0]
            self.begun.append(item.event.event_id if item.event is not None else item.delegation_id)

    def stop(self, user: str) -> None:
        self.registry.stop(self.session, "stop", drops=lambda event: event.user_id == user)
        self.unread.clear()
        self.end()


EXAMPLES = 400


def test_each_message_is_answered_once_and_the_turns_begin_in_the_order_sent(monkeypatch, tmp_path):
    monkeypatch.setattr(session_registry, "QUEUED", 3)
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())  # one for all: each registry holds under its run

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(ops=OPS, chat_id=st.uuids())
    def check(ops, chat_id):
        chat = Chat(store, str(chat_id))
        for op, arg in ops:
            {"say": chat.say, "hold": chat.hold, "stop": chat.stop}[op](arg) if arg is not None else \
                {"complete": chat.complete, "read": chat.read_one, "end": chat.end, "take_held": chat.take_held}[op]()
        while chat.session.running is not None or chat.session.queue or chat.session.held:
            chat.end()
        messages = [key for key in chat.sent if key.startswith("e")]
        answered = [key for key in [*chat.begun, *chat.read, *chat.dropped] if key.startswith("e")]
        assert sorted(answered) == sorted(messages)  # each once: none lost, none twice
        assert len(set(chat.begun)) == len(chat.begun)
        order = [chat.sent[key] for key in chat.begun]
        assert order == sorted(order), (ops, chat.begun)

    try:
        check()
    finally:
        store.close()


def run(store: GatewayStore, ops: list[tuple[str, str | None]]) -> list[str]:
    chat = Chat(store, "g")
    for op, arg in ops:
        getattr(chat, op)(*([arg] if arg is not None else []))
    while chat.session.running is not None or chat.session.queue or chat.session.held:
        chat.end()
    return chat.begun


def test_steers_put_back_past_the_bound_run_after_the_message_held_before_them(monkeypatch, tmp_path):
    # Alice's three steers, put back behind Bob's queued messages, filled the queue to the bound when the first of
    # them came to its front: the store was not read, and it ran before Bob's message held there, sent before it.
    monkeypatch.setattr(session_registry, "QUEUED", 3)
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    try:
        begun = run(store, [("say", "u1"), ("end", None), *[("say", "u2")] * 4, *[("say", "u1")] * 3])
    finally:
        store.close()
    assert begun == [f"e{n}" for n in range(8)]


def test_a_held_answer_put_back_runs_after_the_message_held_in_the_store_before_it(monkeypatch, tmp_path):
    monkeypatch.setattr(session_registry, "QUEUED", 3)
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    try:
        begun = run(store, [("say", "u1"), *[("say", "u2")] * 3, ("end", None), ("hold", "u3")])
    finally:
        store.close()
    assert begun == ["e0", "e1", "e2", "e3", "e4"]
