"""``/new plan the trip``: once the command is answered, the text after it waits for its turn unmarked (a death
meanwhile is charged to the turn that runs, not to it). When the state database refused that unmarking (a
full disk), the event was handled again once the database took writes, and, its answer journaled already,
went on to its turn still marked begun: a gateway dying while it waited behind a slow turn counted as a failed
attempt of the text, set aside after a few such deaths with an apology, though it never ran."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.commands import NEW_SENT_BEFORE
from gateway.dead_letters import FIRST_PAUSE_SECONDS
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_command_answer_full_disk import no_room, room
from tests.polling import until


def parent(request) -> dict:
    said = str(request.messages[-1]["content"])
    return {"wait": "later", "text": f"re: {said}"} if said == "later" else {"text": f"re: {said}"}


async def test_new_text_whose_unmarking_is_refused_waits_unmarked(tmp_path, gateways):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": parent})
    gateway = await gateways(make_config(tmp_path), [chat], clock=clock, model=model)
    # A slow turn of a message sent after the /new (handed over first): the text after the /new waits behind it.
    await chat.say("later", event_id="ev-later", sent_at=clock.time())
    await model.reached("later")
    db = gateway.store.db
    no_room(db, "NEW.event_id = 'ev-new' AND NEW.status = 'received'", "gateway_inbox", event="UPDATE")
    await chat.say("/new plan the trip", event_id="ev-new", sent_at=clock.time() - 1)
    await clock.until_sleeping(lasting=FIRST_PAUSE_SECONDS)  # tried again once the store takes it
    room(db)
    clock.advance(FIRST_PAUSE_SECONDS)
    session = gateway.sessions.find("chat", "c1", None)
    await until(lambda: session.queue)  # handled again: its text waits for its turn
    await gateway.store.durable()
    await chat.wait_for(lambda: chat.texts("command"))
    assert chat.texts("command") == [NEW_SENT_BEFORE]
    assert ("chat", "ev-new") not in gateway.store.inbox.begun()  # waiting for its turn, charged nothing
    assert ("chat", "ev-later") in gateway.store.inbox.begun()
    model.release("later")
    await chat.wait_for(lambda: "re: plan the trip" in chat.texts())
    await settled(gateway)
    assert chat.texts() == [NEW_SENT_BEFORE, "re: later", "re: plan the trip"]
    assert gateway.store.inbox.settled("chat", "ev-new")
