"""A built-in command whose answer the state database refuses to journal (a full disk) is not run again when its
event is handled again, once there is room: its answer is kept and journaled then. Run again, a second ``/new``
started yet another session, forgetting what was said since the first. Nor is a question's answer whose settling
the database refuses read again as a message of its own: the model was paid for it twice, the chat answered twice.
``PRAGMA max_page_count`` on the gateway's live connection makes SQLite refuse as a full disk does."""

from __future__ import annotations

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.dead_letters import APOLOGY, FIRST_PAUSE_SECONDS
from gateway.testing import RecordingAdapter, make_config, settled
from tests.asking_model import asking_parent
from tests.gateway.test_dead_letters import attempts_of, echo
from tests.gateway.test_intake_full_disk import ROOM, pages
from tests.gateway.test_questions import QUESTION


def no_room(db, when: str, table: str, event: str = "INSERT") -> None:
    """From now on, a write to ``table`` matching ``when`` needs room the disk no longer has; others still fit."""
    db.write("CREATE TABLE IF NOT EXISTS ballast(x BLOB)")
    db.commit()
    db._conn.execute(f"CREATE TEMP TRIGGER no_room AFTER {event} ON main.{table} WHEN {when}"
                     " BEGIN INSERT INTO ballast VALUES (zeroblob(400000)); END")
    db._conn.execute(f"PRAGMA max_page_count={pages(db) + 40}")


def room(db) -> None:
    db._conn.execute("DROP TRIGGER no_room")
    db._conn.execute(ROOM)


@pytest.mark.parametrize("text", ["/new", "/new plan the trip"], ids=["alone", "with-message"])
async def test_new_whose_answer_the_full_disk_refuses_is_not_run_again(tmp_path, gateways, text):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path, inbox={"max_attempts": 1}), [chat], clock=clock,
                             script={"parent": echo})
    await chat.say("hello", event_id="ev-0")
    await chat.wait_for(lambda: chat.texts() == ["re: hello"])
    await settled(gateway)
    db = gateway.store.db
    no_room(db, "NEW.key LIKE 'cmd-chat-ev-new:%'", "gateway_outbox")
    await chat.say(text, event_id="ev-new")
    await clock.until_sleeping(lasting=FIRST_PAUSE_SECONDS)  # tried again once the store takes it
    session = next(iter(gateway.sessions))
    generation = session.session_id
    # Said in the new session while the answer waits for room: a second /new would forget it.
    await chat.say("after", event_id="ev-after")
    await chat.wait_for(lambda: "re: after" in chat.texts())
    room(db)
    clock.advance(FIRST_PAUSE_SECONDS)
    await chat.wait_for(lambda: chat.texts("command"))
    await settled(gateway)
    [answer] = chat.texts("command")
    assert answer.startswith("Started a new session.")  # the answer the command gave, not a second run's
    assert session.session_id == generation  # one new session, not two
    assert APOLOGY not in chat.texts() and gateway.store.dead_letters.all() == []
    assert gateway.store.inbox.settled("chat", "ev-new")
    if text != "/new":
        assert "re: plan the trip" in chat.texts()
    await gateway.stop(grace=0)
    assert attempts_of(tmp_path, "ev-new") == 0


async def test_stop_whose_answer_the_full_disk_refuses_is_not_run_again(tmp_path, gateways):
    def parent(request) -> dict:
        said = request.messages[-1]["content"]
        return {"wait": "later", "text": f"re: {said}"} if said == "later" else {"text": f"re: {said}"}

    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": parent})
    gateway = await gateways(make_config(tmp_path), [chat], clock=clock, model=model)
    await chat.say("hello", event_id="ev-0")
    await chat.wait_for(lambda: chat.texts() == ["re: hello"])
    await settled(gateway)
    db = gateway.store.db
    no_room(db, "NEW.key LIKE 'cmd-chat-ev-stop:%'", "gateway_outbox")
    await chat.say("/stop", event_id="ev-stop")
    await clock.until_sleeping(lasting=FIRST_PAUSE_SECONDS)
    # A turn begun after the /stop ran: the /stop run again would stop it, or answer about it.
    await chat.say("later", event_id="ev-later")
    await model.reached("later")
    room(db)
    clock.advance(FIRST_PAUSE_SECONDS)
    await chat.wait_for(lambda: chat.texts("command"))
    assert chat.texts("command") == ["Nothing was running."]  # what it found when it ran
    model.release("later")
    await chat.wait_for(lambda: "re: later" in chat.texts())
    await settled(gateway)
    assert gateway.store.inbox.settled("chat", "ev-stop")
    assert not gateway._answers._unjournaled  # forgotten once journaled


async def test_an_answer_whose_settling_the_full_disk_refuses_is_not_run_again_as_a_message(tmp_path, gateways):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [chat], clock=clock,
                             model=ScriptedModel({"parent": asking_parent}))
    await chat.say("please deploy the app", event_id="ev-ask")
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    db = gateway.store.db
    no_room(db, "NEW.event_id = 'ev-answer' AND NEW.status = 'done'", "gateway_inbox", event="UPDATE")
    await chat.say("2", event_id="ev-answer")
    await chat.wait_for(lambda: chat.texts() == [QUESTION, "deploying to: production"])  # handed over at once
    await clock.until_sleeping(lasting=FIRST_PAUSE_SECONDS)  # its settling tried again once the store takes it
    room(db)
    clock.advance(FIRST_PAUSE_SECONDS)
    await settled(gateway)
    assert gateway.store.inbox.settled("chat", "ev-answer")
    assert chat.texts() == [QUESTION, "deploying to: production"]  # not "plain answer to 2" as well
    assert gateway.store.inbox.unfinished() == []
