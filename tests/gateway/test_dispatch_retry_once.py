"""An event whose handling failed after its turn was queued is tried again: that must not queue the
same turn a second time (its model paid twice, its tools run twice, its chat maybe answered twice)."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.dead_letters import FIRST_PAUSE_SECONDS
from gateway.questions import FILE_WAITS, question_text
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import Attachment
from tests.asking_model import CHOICES, asking_parent

QUESTION = question_text("Which environment?", CHOICES, 600)
# The notice that a message with files waits for the question is refused (a full disk), once.
REFUSE_NOTICE = ("CREATE TRIGGER refuse BEFORE INSERT ON gateway_outbox WHEN NEW.key LIKE 'cmd-chat-ev-file%'"
                 " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")


async def test_a_message_whose_file_notice_the_store_refused_is_queued_once(tmp_path, gateways):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    calls: list[str] = []

    def parent(request):
        if request.messages[-1]["role"] == "user":
            calls.append(str(request.messages[-1]["content"]))
        return asking_parent(request)

    gateway = await gateways(make_config(tmp_path, display={"busy_input_mode": "queue"}), [chat],
                             model=ScriptedModel({"parent": parent}), clock=clock)
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    gateway.store.db.write(REFUSE_NOTICE)
    await chat.say("staging", event_id="ev-file",
                   attachments=[Attachment("voice", "voice.ogg", "audio/ogg", None, "v1")])
    await clock.until_sleeping(lasting=FIRST_PAUSE_SECONDS)  # refused: tried again after the pause, uncounted
    gateway.store.db.write("DROP TRIGGER refuse")
    clock.advance(FIRST_PAUSE_SECONDS)
    await chat.wait_for(lambda: FILE_WAITS in chat.texts())
    session = gateway.sessions.find("chat", "c1", None)
    assert len(session.queue) == 1, [item.turn_id for item in session.queue]

    await chat.say("1")
    await chat.wait_for(lambda: "deploying to: staging" in chat.texts())
    await settled(gateway)
    assert len([c for c in calls if "staging" in c]) == 1, calls  # the message with the file: one turn
    assert chat.texts().count(FILE_WAITS) == 1
    assert gateway.store.inbox.settled("chat", "ev-file") and gateway.store.dead_letters.all() == []
