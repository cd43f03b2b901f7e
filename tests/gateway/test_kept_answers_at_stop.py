"""A command's answer the state database refused to journal (a full disk) is kept in memory until its event is
tried again. A stop before that try, the disk having room again, lost it: the next start ran the command again
(a second ``/new`` started yet another session, forgetting what was said in the first). The stop journals it."""

from __future__ import annotations

import contextlib
import sqlite3

import pytest

from agent.testing import FakeClock
from gateway.dead_letters import FIRST_PAUSE_SECONDS
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_command_answer_full_disk import no_room, room
from tests.gateway.test_dead_letters import echo
from tests.gateway.test_plugin_answer_full_disk import PLUGIN
from tests.plugin_modules import plugin_module


def generation(tmp_path) -> int:
    with contextlib.closing(sqlite3.connect(tmp_path / "state" / "switchboard.db")) as db:
        return db.execute("SELECT generation FROM gateway_sessions").fetchone()[0]


@pytest.mark.parametrize("text", ["/new", "/new plan the trip"], ids=["alone", "with-message"])
async def test_a_stop_journals_a_kept_answer_and_the_next_start_does_not_run_it_again(tmp_path, gateways, text):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [chat], clock=clock, script={"parent": echo})
    await chat.say("hello", event_id="ev-0")
    await chat.wait_for(lambda: chat.texts() == ["re: hello"])
    await settled(gateway)
    db = gateway.store.db
    no_room(db, "NEW.key LIKE 'cmd-chat-ev-new:%'", "gateway_outbox")
    await chat.say(text, event_id="ev-new")
    await clock.until_sleeping(lasting=FIRST_PAUSE_SECONDS)  # its answer kept, tried again after the pause
    room(db)  # room again, and the gateway stops before the try
    await gateway.stop(grace=0)
    assert generation(tmp_path) == 2

    again = RecordingAdapter()
    restarted = await gateways(make_config(tmp_path), [again], script={"parent": echo})
    if text != "/new":
        await again.wait_for(lambda: "re: plan the trip" in again.texts())
    await settled(restarted)
    assert generation(tmp_path) == 2  # one /new, one new session
    answers = [t for t in (*chat.texts(), *again.texts()) if t.startswith("Started a new session")]
    assert len(answers) == 1  # not answered twice
    assert restarted.store.inbox.settled("chat", "ev-new")


async def test_a_stop_journals_a_kept_plugin_answer_and_does_not_wait_out_its_pause(tmp_path, gateways, monkeypatch):
    plugin = plugin_module(tmp_path, monkeypatch, "reporting_plugin", PLUGIN)
    config = make_config(tmp_path, plugins=["reporting_plugin"])
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(config, [chat], clock=clock, script={"parent": echo})
    db = gateway.store.db
    no_room(db, "NEW.key LIKE 'cmd-chat-ev-report:%'", "gateway_outbox")
    await chat.say("/report now", event_id="ev-report")
    await clock.until_sleeping(lasting=FIRST_PAUSE_SECONDS)  # its answer kept, tried again after the pause
    room(db)
    await gateway.stop(grace=5)  # over at once: the answer is journaled, its try again not waited for
    assert chat.texts() == ["reported"]
    again = RecordingAdapter()
    restarted = await gateways(config, [again], script={"parent": echo})
    await settled(restarted)
    assert plugin.runs == ["now"]  # the handler ran once
    assert restarted.store.inbox.settled("chat", "ev-report")
