"""A start whose read of the delegations left running fails when the ledger resumes them (an I/O
error) goes on serving: by then turns have begun (replayed events, new messages), which a raise
would cut short. Nothing is resumed in that run; the rows stay unsettled for the next start.
(A delegation whose results were queued, or whose completion turn ran, is taken up before that read, where it
was in its chat: `tests/gateway/test_ledger_restart_order_unreplayed.py`; this one's children still ran.)"""

from __future__ import annotations

import logging
import sqlite3

from agent.models.scripted import ScriptedModel
from gateway.ledger import Ledger
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_ledger import BACKGROUND, parent


def found(request) -> dict:
    return {"text": f"found {request.metadata['goal']}"}


async def test_a_delegations_read_refused_at_resume_is_logged_and_the_rows_wait_for_the_next_start(
        tmp_path, gateways, caplog, monkeypatch):
    config = make_config(tmp_path, **BACKGROUND, lifecycle={"on_restart": "resume"})
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": parent(), "leaf": lambda request: {"wait": "leaf", "text": "unused"}})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("please delegate")
    await model.reached("leaf")  # its child runs: the stop interrupts it, and the next start relaunches it
    await gateway.stop(grace=0)

    resume = Ledger.resume

    async def refused_then_resume(ledger: Ledger, platforms) -> None:
        def refused():
            raise sqlite3.OperationalError("disk I/O error")

        ledger._table.running = refused  # only while the ledger resumes: the start's earlier reads go through
        try:
            await resume(ledger, platforms)
        finally:
            del ledger._table.running

    monkeypatch.setattr(Ledger, "resume", refused_then_resume)
    chat2 = RecordingAdapter()
    with caplog.at_level(logging.ERROR, logger="gateway.ledger"):
        gateway2 = await gateways(config, [chat2], model=ScriptedModel({"parent": parent(), "leaf": found}))
    await settled(gateway2)
    assert any("none is resumed now" in r.getMessage() and "disk I/O error" in (r.exc_text or "")
               for r in caplog.records), caplog.text
    assert chat2.messages == []
    [row] = gateway2.store.delegations.running()  # kept for the next start
    await chat2.say("hello")  # the gateway serves
    await chat2.wait_for(lambda: chat2.texts() == ["echo hello"])
    await gateway2.stop(grace=0)

    monkeypatch.setattr(Ledger, "resume", resume)
    chat3 = RecordingAdapter()
    gateway3 = await gateways(config, [chat3], model=ScriptedModel({"parent": parent(), "leaf": found}))
    await chat3.wait_for(lambda: chat3.messages)
    await settled(gateway3)
    assert chat3.texts() == ["results: alpha"]
    assert gateway3.store.delegations.running() == []
