"""A start after a death drops what the runs before it journaled of their questions and could not
have got sent, for the turns that run again: sent now, such a question would ask for an answer
nothing waits for, should the turn run again not ask it. Nothing else is dropped."""

from __future__ import annotations

import time

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.questions import question_text
from gateway.testing import RecordingAdapter, make_config
from platforms.base import Inbound

QUESTION = question_text("Which environment?", ["staging", "production"], 600)
REFUSED = "RateLimited: Too Many Requests: retry after 60"
LOST = "NetworkError: Cannot connect to host"


def message(event_id: str) -> Inbound:
    return Inbound("chat", "c1", None, "u1", "alice", "please deploy the app", event_id, is_private=True)


async def test_a_start_drops_the_questions_of_turns_run_again_that_cannot_have_gone_out_and_nothing_else(
        tmp_path, gateways):
    config = make_config(tmp_path)
    earlier = Gateway(AgentHost(config), [RecordingAdapter()])  # never started: what a killed process left
    outbox, rows, inbox, now = earlier.outbox, earlier.store.outbox, earlier.store.inbox, time.time()
    inbox.accept(message("ev-1"), "t-1")  # unsettled: its turn runs again
    inbox.accept(message("ev-2"), "t-2")
    inbox.settle("chat", "ev-2")  # its turn ended: it does not run again
    left = {  # key: (whether tried, the errors of its attempts, when to try again)
        "t-1:ask:r-1:0": (False, [], None),  # never tried
        "t-1:ask:r-2:0": (True, [REFUSED], now + 60),  # refused: not taken
        "t-1:ask:r-3:0": (True, [REFUSED], now - 1),  # refused, and the process died before trying again
        "t-1:ask:r-4:0": (True, [], None),  # on its way when the process died: it may be in the chat
        "t-1:ask:r-5:0": (True, [LOST], now - 1),  # its answer lost: it may be in the chat
        "t-1:ask:r-6:0": (True, [LOST, REFUSED], now - 1),  # the first try may have been taken
        "t-1:ask:r-7:0:expired": (False, [], None),  # no question: said under one
        "t-1:note": (False, [], None),  # no question
        "t-2:ask:r-8:0": (False, [], None),  # its turn does not run again
    }
    for key, (tried, errors, due) in left.items():
        [part] = outbox.enqueue("chat", "c1", None, QUESTION, kind="reply", key=key, turn_id=key.partition(":")[0])
        row = rows.message(part)
        if tried:
            rows.mark_tried(row.id)
        for error in errors:
            rows.record_attempt(row.id, error, due)
    await earlier.stop(grace=0)

    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": lambda request: {"text": "deploying"}}))
    status = {key: gateway.store.outbox.message(f"{key}:0").status for key in left}
    assert [key for key, s in status.items() if s == "dropped"] == ["t-1:ask:r-1:0", "t-1:ask:r-2:0", "t-1:ask:r-3:0"]
    await chat.wait_for(lambda: "deploying" in chat.texts())
    assert chat.texts() == [QUESTION] * 6 + ["deploying"]  # the rest, in order
