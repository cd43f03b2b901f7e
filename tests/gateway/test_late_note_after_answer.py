"""A turn whose answer went out but whose message was never settled (its end owed at the stop, or a crash between
the two commits) runs again after a restart: however late that restart, it sends no "⏱ Answering your message
from …" note, which would follow the answer it already gave, with nothing after it (the rerun's reply is the one
already journaled)."""

from __future__ import annotations

import sqlite3

from agent.testing import FakeClock
from gateway.testing import RecordingAdapter, make_config, settled, start_gateway


async def test_a_turn_answered_before_a_late_restart_runs_again_without_a_late_note(tmp_path, monkeypatch) -> None:
    clock = FakeClock(autojump=False)
    config = make_config(tmp_path, agent={"gateway_notify_interval": 0})
    chat = RecordingAdapter()
    gateway = await start_gateway(config, [chat], clock=clock, script={"parent": [[{"text": "sunny"}]]})
    try:
        def refused(*args):
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(gateway.store.inbox, "settle", refused)
        await chat.say("what is the weather in Lisbon?", event_id="ev-1")
        await chat.wait_for(lambda: chat.texts() == ["sunny"])
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)  # its end still owed: unsettled, the turn runs again after the start
    monkeypatch.undo()
    clock.advance(5 * 3600)

    again = RecordingAdapter()
    gateway = await start_gateway(config, [again], clock=clock, script={"parent": [[{"text": "sunny"}]]})
    try:
        await settled(gateway)
        assert gateway.store.inbox.settled(chat.name, "ev-1")
    finally:
        await gateway.stop(grace=0)
    assert again.texts() == []  # before: "⏱ Answering your message from 5 h ago: …", and no answer after it
