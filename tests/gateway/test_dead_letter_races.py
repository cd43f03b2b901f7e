"""A dead letter acted on twice at once: by `switchboard inbox retry` (another process) and by the
operator console of the running gateway. Each letter is handed back, or forgotten, once: its event
is never handled twice, and one dismissed is not handled after all."""

from __future__ import annotations

import asyncio
import sqlite3
import sys

import aiohttp
import pytest

from agent.testing import FakeClock
from gateway.cli import main
from gateway.dead_letters import REQUEUE_POLL_SECONDS
from gateway.testing import RecordingAdapter, make_config, settled
from lifecycle import SqliteDatabase
from tests.gateway.observing import served


@pytest.fixture(autouse=True)
def _quiet_expected_errors(caplog):
    caplog.set_level("CRITICAL", logger="gateway.dead_letters")


async def watcher_looked(clock: FakeClock) -> None:
    """Let the running gateway look for re-queued events once, and take up what it finds."""
    await clock.until_sleeping(lasting=REQUEUE_POLL_SECONDS)
    clock.advance(REQUEUE_POLL_SECONDS)
    await clock.until_sleeping(lasting=REQUEUE_POLL_SECONDS)


@pytest.mark.parametrize("console_action", ["retry", "dismiss"])
async def test_a_letter_the_console_acts_on_while_the_cli_retries_it_is_not_handed_back_again(
        tmp_path, gateways, monkeypatch, capsys, console_action) -> None:
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    config = make_config(tmp_path, inbox={"max_attempts": 1})
    gateway = await gateways(config, [chat], clock=clock,
                             script={"parent": [[{"text": "answered"}], [{"text": "answered twice"}]]})
    save = gateway.store.sessions.save

    def refuse(row):
        raise sqlite3.OperationalError("database or disk is full")

    gateway.store.sessions.save = refuse
    await chat.say("please answer", chat="c1", event_id="ev-1")
    await settled(gateway)
    [letter] = gateway.store.dead_letters.all()
    gateway.store.sessions.save = save
    chat.messages.clear()  # the apology
    loop = asyncio.get_running_loop()

    async def console_acts() -> None:
        async with aiohttp.ClientSession() as http, http.post(
                f"{server.url}/console/api/dead-letters/{letter.id}/{console_action}", data="{}",
                headers={"Content-Type": "application/json"}) as response:
            assert response.status == 200, await response.text()
        if console_action == "retry":
            await watcher_looked(clock)
            await chat.wait_for(lambda: chat.texts() == ["answered"])
        await settled(gateway)

    # The console acts while the CLI, another process, is about to hand the letter back: its write
    # has not begun yet.
    original = SqliteDatabase.transaction
    raced = []

    def transaction(self):
        caller = sys._getframe(1).f_code
        if (self is not gateway.store.db and not raced and caller.co_name == "retry"
                and caller.co_filename.endswith("dead_letters.py")):
            raced.append(True)
            asyncio.run_coroutine_threadsafe(console_acts(), loop).result(timeout=20)
        return original(self)

    monkeypatch.setattr(SqliteDatabase, "transaction", transaction)
    config_file = tmp_path / "switchboard.yaml"
    config_file.write_text(f"state_dir: {config.state_dir}\n")
    async with served(gateway) as server:
        # The CLI is another process in real life: here a thread, with no event loop of its own.
        status = await asyncio.to_thread(main, ["inbox", "retry", str(letter.id), "--config", str(config_file)])
        assert raced
        await watcher_looked(clock)  # whatever the CLI handed back, the running gateway has taken up
        await settled(gateway)
    said = [m["content"] for s in gateway.sessions for m in s.agent.messages if m["role"] == "user"]
    if console_action == "retry":
        assert said == ["please answer"]  # one turn: the model was not asked again
        assert chat.texts() == ["answered"]
    else:
        assert said == [] and chat.texts() == []
        assert gateway.store.inbox.settled("chat", "ev-1")  # still set aside: a redelivery is a duplicate
    assert status == 1 and f"no dead letter {letter.id}" in capsys.readouterr().err
    assert gateway.store.dead_letters.all() == []
