"""Property: in a forum of two topics, the question's ("9") and another ("7"), whatever members send there, the
replayed turn in "9" holds for its question (from "9", or from "7" as a reply across topics, `RunningTurn.held_home`),
takes, stops and the store holds (`QUEUED`), each message is answered once (a turn of its own in the topic it was
written in, or taken by the question) or dropped by a stop, and each topic's turns begin in the order their messages
came there: a reply held across topics only after the turns that began while it was held. A member's stop in a topic
drops their messages written there before it, a reply held across topics too."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agent import AgentSession
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway import session_registry
from gateway.session_registry import SessionRegistry
from gateway.sessions import WorkItem
from gateway.store import GatewayStore
from platforms.base import Inbound

USERS = ("u1", "u2")
THREADS = ("9", "7")
OPS = st.lists(st.one_of(st.tuples(st.just("say"), st.sampled_from(THREADS), st.sampled_from(USERS)),
                         st.tuples(st.sampled_from(("hold", "xhold")), st.just("9"), st.sampled_from(USERS)),
                         st.tuples(st.sampled_from(("end", "complete")), st.sampled_from(THREADS), st.none()),
                         st.tuples(st.just("take_held"), st.just("9"), st.none()),
                         st.tuples(st.just("stop"), st.sampled_from(THREADS), st.sampled_from(USERS))),
               max_size=40)


def new_agent(session_id, mode, chat, backend):
    return AgentSession(model=ScriptedModel({}), tools={}, session_id=session_id)


class Forum:
    """The registry driven as the gateway drives it for a forum's two topics, with what became of each message."""

    def __init__(self, store: GatewayStore, chat_id: str) -> None:
        self.chat_id = chat_id
        self.dropped: list[str] = []
        self.registry = SessionRegistry(store.sessions, new_agent=new_agent, mode_for=lambda platform: "inline",
                                        clock=FakeClock(), ended=self._ended)
        self.sessions = {thread: self.registry.get("telegram", chat_id, thread) for thread in THREADS}
        self.sent: dict[str, int] = {}
        self.thread_of: dict[str, str] = {}
        self.begun: dict[str, list[str]] = {thread: [] for thread in THREADS}
        self.read: list[str] = []
        self.across: dict[str, set[str]] = {}
        """Replies held across topics sent home, each with what had begun in its topic by then."""
        self.user_of: dict[str, str] = {}
        self.stops: list[tuple[str, str, int, int]] = []
        """Each stop: its topic, its member, the messages sent before it and the turns begun there before it."""

    def _ended(self, session, why, stopped, waiting) -> None:
        self.dropped += [event.event_id for _, event in waiting]

    def _message(self, thread: str, user: str) -> tuple[Inbound, str]:
        key = f"e{len(self.sent)}"
        self.sent[key], self.thread_of[key], self.user_of[key] = len(self.sent), thread, user
        return Inbound("telegram", self.chat_id, thread, user, None, key, key, is_private=False, message_id=key), key

    def say(self, thread: str, user: str) -> None:
        inbound, key = self._message(thread, user)
        self.registry.enqueue(self.sessions[thread], WorkItem("message", key, f"t-{key}", inbound))

    def hold(self, thread: str, user: str) -> None:
        """A replayed turn holds the message for the question it may ask again (`Questions.hold`)."""
        running = self.sessions["9"].running
        if running is None or running.suppressed or running.held_answer is not None:
            return self.say("9", user)
        inbound, key = self._message("9", user)
        running.held_answer = WorkItem("message", key, f"t-{key}", inbound)

    def xhold(self, thread: str, user: str) -> None:
        """The replayed turn in "9" holds a reply from "7" (`Questions.hold_across_threads`)."""
        running = self.sessions["9"].running
        if running is None or running.suppressed or running.held_answer is not None:
            return self.say("7", user)
        inbound, key = self._message("7", user)
        home = self.sessions["7"]

        def send_home(item: WorkItem) -> None:
            self.across[item.event.event_id] = set(self.begun["7"])
            self.registry.enqueue(home, item)

        running.held_answer, running.held_home = WorkItem("message", key, f"t-{key}", inbound), send_home

    def take_held(self, thread: str) -> None:
        running = self.sessions["9"].running
        if running is not None and running.held_answer is not None and not running.suppressed:
            self.read.append(running.held_answer.event.event_id)
            running.held_answer = running.held_home = None

    def complete(self, thread: str) -> None:
        key = f"d{len(self.sent)}"
        self.sent[key], self.thread_of[key] = len(self.sent), thread
        self.registry.enqueue(self.sessions[thread], WorkItem("completion", key, f"t-{key}", delegation_id=key))

    def end(self, thread: str) -> None:
        session = self.sessions[thread]
        if session.running is not None:
            self.registry.end(session)
        begun = self.registry.begin(session)
        if begun is not None:
            item = begun[0]
            self.begun[thread].append(item.event.event_id if item.event is not None else item.delegation_id)

    def stop(self, thread: str, user: str) -> None:
        self.stops.append((thread, user, len(self.sent), len(self.begun[thread])))
        self.registry.stop(self.sessions[thread], "stop", drops=lambda event: event.user_id == user)
        self.end(thread)

    def busy(self) -> bool:
        return any(s.running is not None or s.queue or s.held for s in self.sessions.values())


EXAMPLES = 400


def check_forum(forum: Forum) -> None:
    while forum.busy():
        for thread in THREADS:
            forum.end(thread)
    messages = [key for key in forum.sent if key.startswith("e")]
    begun = [key for thread in THREADS for key in forum.begun[thread]]
    answered = [key for key in [*begun, *forum.read, *forum.dropped] if key.startswith("e")]
    assert sorted(answered) == sorted(messages)  # each once: none lost, none twice
    for thread in THREADS:
        assert all(forum.thread_of[key] == thread for key in forum.begun[thread])  # in the topic written in
        order = forum.begun[thread]
        for i, first in enumerate(order):
            for then in order[i + 1:]:
                if forum.sent[then] < forum.sent[first]:  # sent earlier, begun later: only one held meanwhile
                    assert first in forum.across.get(then, ()), (thread, order)
    for thread, user, sent, begun_before in forum.stops:  # a member's stop drops what they sent there before it
        assert not [key for key in forum.begun[thread][begun_before:]
                    if key.startswith("e") and forum.user_of[key] == user and forum.sent[key] < sent], (thread, user)


def test_each_message_is_answered_once_in_its_topic_in_the_order_it_came(monkeypatch, tmp_path):
    monkeypatch.setattr(session_registry, "QUEUED", 3)
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())  # one for all: each registry holds under its run

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(ops=OPS, chat_id=st.uuids())
    # Bob's reply held across topics, then his /stop in the topic he wrote it in, the question not asked again.
    @example(ops=[("say", "9", "u1"), ("end", "9", None), ("xhold", "9", "u1"), ("stop", "7", "u1")],
             chat_id=uuid.UUID(int=1))
    def check(ops, chat_id):
        forum = Forum(store, str(chat_id))
        for op, thread, user in ops:
            getattr(forum, op)(thread, *([user] if user is not None else []))
        check_forum(forum)

    try:
        check()
    finally:
        store.close()
