"""Messages a session holds in the store beyond `QUEUED`: they count as waiting where those in memory do (a
sender's next message is not steered past theirs; the console counts them), and a stop the store refuses
changes nothing, not even what was steered into the running turn."""

from __future__ import annotations

import pytest

from gateway import session_registry
from gateway.console.snapshot import ConsoleView
from gateway.sessions import WorkItem
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import Attachment
from tests.gateway.test_session_queue_bound import echoing, message, registry_on, store  # noqa: F401


async def queued(gateway) -> int:
    """The console's count of the one session's waiting messages."""
    (row,) = (await ConsoleView(gateway, gateway.recent_errors).snapshot())["sessions"]
    return row["queued"]


async def test_a_senders_held_message_keeps_their_next_one_from_being_steered_past_it(tmp_path, gateways,
                                                                                        monkeypatch):
    monkeypatch.setattr(session_registry, "QUEUED", 2)
    chat, model = RecordingAdapter(), echoing(gate_first=True)
    gateway = await gateways(make_config(tmp_path, display={"busy_input_mode": "steer"}), [chat], model=model)
    await chat.say("m0", private=False)
    await model.reached("first")
    for n in (1, 2):  # another member's requests fill what the session holds in memory
        await chat.say(f"other {n}", user="u2", name="bob", private=False)
    await chat.say("with a file", private=False, attachments=[Attachment("image", "a.png", "image/png", 3, "f1")])
    session = gateway.sessions.find(chat.name, "c1", None)
    assert (len(session.queue), session.held) == (2, 1)
    assert (await queued(gateway)) == 3

    await chat.say("after the file", private=False)
    assert not session.running.steered and session.held == 2  # it waits behind the file, in the store
    assert (await queued(gateway)) == 4
    model.release("first")
    await chat.wait_for(lambda: any("after the file" in text for text in chat.texts("reply")))
    await settled(gateway)
    answers = [text for text in chat.texts("reply") if text.startswith("re: ")]
    assert answers == ["re: [@alice] m0", "re: [@bob] other 1", "re: [@bob] other 2", "re: [@alice] with a file",
                       "re: [@alice] after the file"]


def test_a_held_message_of_the_sender_counts_as_waiting_and_another_members_does_not(store):  # noqa: F811
    registry = registry_on(store)
    session = registry.get("telegram", "c", None)
    registry.enqueue(session, WorkItem("message", "first", "t-first", message(-1)))
    registry.begin(session)
    for n in range(session_registry.QUEUED):
        registry.enqueue(session, WorkItem("message", f"text {n}", f"t-{n}", message(n, "u2")))
    registry.enqueue(session, WorkItem("message", "held", "t-held", message(999, "u1")))
    assert session.held == 1
    assert registry.waits_from(session, "u1") and registry.waits_from(session, "u2")
    assert not registry.waits_from(session, "u3")


def test_a_stop_the_store_refuses_leaves_what_was_steered_into_the_turn_where_it_was(store,  # noqa: F811
                                                                                      monkeypatch):
    registry = registry_on(store)
    session = registry.get("telegram", "c", None)
    registry.enqueue(session, WorkItem("message", "first", "t-first", message(-1)))
    registry.begin(session)
    registry.steer(session, message(-2), "t-first")
    for n in range(session_registry.QUEUED + 3):
        registry.enqueue(session, WorkItem("message", f"text {n}", f"t-{n}", message(n)))

    def refused(*args):
        raise OSError("disk full")

    monkeypatch.setattr(store.sessions, "release", refused)
    with pytest.raises(OSError):
        registry.stop(session, "stop")
    assert [item.event for item in session.running.steered] == [message(-2)]
    assert session.agent.unread_steers == 1 and not session.running.suppressed
    assert (len(session.queue), session.held) == (session_registry.QUEUED, 3)

    monkeypatch.undo()
    stopped = registry.stop(session, "stop")  # asked again, it stops it all
    assert stopped.turn and stopped.dropped == session_registry.QUEUED + 3 + 1
    assert not session.queue and session.held == 0
