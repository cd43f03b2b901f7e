"""A turn whose bookkeeping meets a full disk, end to end through the web chat: the store's writes
at the turn's end (its reply, its transcript, its messages' settling) or at a stop raise, and the
turn ends all the same, so the chat goes on once there is room, without a restart. What the turn's
end could not record is owed (`gateway.owed_ends`): its messages stay unsettled, and nothing of it
is stored, until the chat's next turn or ``/new`` records it all, reply, transcript and settling;
a restart before then runs the turn again."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Callable

import aiohttp
import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from tests.gateway.test_delegate_full_disk import lose_the_batch_for_good
from tests.scenarios.test_full_disk import LONG, disk_full, room_again
from tests.web_client import get_history, post_message, web_chats

JSON = {"Content-Type": "application/json"}


def answers(request: ModelRequest) -> dict:
    """``first`` waits at the gate ``first`` and answers past a page (its reply needs a page the full
    disk cannot give); ``second`` waits at ``second``; anything else is echoed."""
    said = request.messages[-1]["content"]
    if said in ("first", "second"):
        return {"wait": said, "text": f"long answer to {said} {LONG}" if said == "first" else f"echo: {said}"}
    return {"text": f"echo: {said}"}


async def until(predicate: Callable[[], object], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


async def first_ended_on_a_full_disk(http: aiohttp.ClientSession, web, model: ScriptedModel):
    """The chat's "first" answered while the disk is full: its turn has ended, its end owed
    (`gateway.owed_ends`). Returns the chat's session."""
    gateway = web.gateway
    assert (await post_message(http, web.base, "c1", "first", key="key-first-1"))[0] == 202
    await model.reached("first")
    await disk_full(gateway.store.db)
    model.release("first")
    await until(lambda: not gateway.runner.busy)
    session = next(iter(gateway.sessions))
    assert session.owed
    return session


async def texts(http: aiohttp.ClientSession, base: str) -> list[str]:
    return [m["text"][:20] for m in await get_history(http, base)]


async def answered(http: aiohttp.ClientSession, base: str, text: str) -> None:
    async with asyncio.timeout(10):
        while text not in await texts(http, base):
            await asyncio.sleep(0.02)


def stored(gateway: Gateway) -> list[str]:
    """What the web chat c1 said, as its stored transcript holds it."""
    row = gateway.store.sessions.load("web|c1|")
    return [m["content"] for m in row.transcript if m["role"] == "user"] if row is not None else []


def no_tracebacks(caplog) -> None:
    """A refused write is one WARNING line, not a crashed worker's traceback (`Task exception was
    never retrieved`) nor a server error's."""
    assert [r.getMessage()[:80] for r in caplog.records if r.exc_info or r.name in ("asyncio", "aiohttp.server")] == []


@pytest.mark.parametrize("busy_input_mode", ["steer", "queue"])
async def test_a_chat_whose_turn_ended_on_a_full_disk_answers_its_next_messages_once_there_is_room(
        tmp_path, caplog, busy_input_mode):
    # The reply, then the transcript, are refused at the turn's end. Before, `_run` raised there: the
    # worker was gone, but the chat's turn still counted as running, so a message steered into it was
    # never read and one queued behind it waited for a worker that never came, room or not.
    model = ScriptedModel({"parent": answers})
    model.release("second")
    async with web_chats(tmp_path) as start, aiohttp.ClientSession() as http:
        web = await start(agent_model=model, display={"busy_input_mode": busy_input_mode})
        gateway = web.gateway
        assert (await post_message(http, web.base, "c1", "first", key="key-first-1"))[0] == 202
        await model.reached("first")
        assert (await post_message(http, web.base, "c1", "second", key="key-second-1"))[0] == 202
        await disk_full(gateway.store.db)
        model.release("first")
        await until(lambda: not gateway.runner.busy)  # the turn of "first" has ended, one way or the other
        session = next(iter(gateway.sessions))
        room_again(gateway.store.db)

        await answered(http, web.base, "echo: second")  # no restart, no other message needed
        # Its reply never journaled: "first" is not settled, so it is not lost; nor stored, as it may run again.
        assert not gateway.store.inbox.settled("web", "key-first-1@c1")
        assert stored(gateway) == []
        assert (await post_message(http, web.base, "c1", "third", key="key-third-1"))[0] == 202
        await answered(http, web.base, "echo: third")
        await web.settled()
        assert session.running is None and not session.queue
        # The end of "first" was owed, and paid as "third" began: its reply went out, its message is settled,
        # and the transcript holds it, stored with that settling.
        assert gateway.store.inbox.settled("web", "key-first-1@c1")
        assert gateway.store.inbox.settled("web", "key-third-1@c1")
        assert await texts(http, web.base) == [
            "first", "second", "echo: second", "third", "long answer to first", "echo: third"]
        assert stored(gateway) == ["first", "second", "third"]
        assert not session.owed
        said = [r.getMessage() for r in caplog.records if r.name == "gateway.turn_runner"]
        assert said[0].startswith("could not record all of turn ") and "database or disk is full" in said[0]
        assert "its reply" in said[0] and "the turn runs again after the next start, unless its end is" in said[0]
        assert all(LONG not in line for line in said)
        no_tracebacks(caplog)

        await web.restart()  # nothing runs again: every message was answered once, and stays so
        await web.settled()
        assert stored(web.gateway) == ["first", "second", "third"]  # before, "first" came again, after "third"
        assert await texts(http, web.base) == [
            "first", "second", "echo: second", "third", "long answer to first", "echo: third"]


async def test_a_console_stop_on_a_full_disk_holds_and_the_chat_goes_on_with_what_it_queued(tmp_path, caplog):
    # The stop's own bookkeeping (settling the stopped message, telling the chat) and then the stopped
    # turn's end meet a batch SQLite rolled back and cannot write again: the stop holds all the same, said
    # in one line, and the worker goes on to the message queued behind, answered once there is room.
    model = ScriptedModel({"parent": answers})
    async with web_chats(tmp_path) as start, aiohttp.ClientSession() as http:
        web = await start(agent_model=model, display={"busy_input_mode": "queue"})
        gateway = web.gateway
        db = gateway.store.db
        status, first = await post_message(http, web.base, "c1", "first", key="key-first-1")
        assert status == 202
        await model.reached("first")  # never released: only the stop ends it
        assert (await post_message(http, web.base, "c1", "second", key="key-second-1"))[0] == 202
        await db.durable()
        lose_the_batch_for_good(db)
        # The stop is done, but not durably: the console says so, naming the database, not a bare 500.
        async with http.post(f"{web.base}/console/api/turns/{first['turn_id']}/stop", data="{}",
                             headers=JSON) as response:
            assert response.status == 503
            assert "the state database cannot be written" in (await response.json())["error"]
        async with asyncio.timeout(10):
            await model.reached("second")  # the stopped turn ended: the next queued one runs
        db._conn.execute("PRAGMA max_page_count=1073741823")  # room again (a read through db would raise)
        model.release("second")
        await answered(http, web.base, "echo: second")
        await web.settled()
        session = next(iter(gateway.sessions))
        assert session.running is None and not session.queue
        assert gateway.store.inbox.settled("web", "key-second-1@c1")
        assert "long answer to first" not in await texts(http, web.base)
        said = [r.getMessage() for r in caplog.records if r.name == "gateway.turn_runner"]
        assert said[0].startswith("could not record all that a stop (console) ended in web chat c1")
        assert "its message's settling" in said[0]
        # Not the stop raising from its bookkeeping: that would leave the turn's subagents running.
        assert [r for r in caplog.records if r.exc_info and "turn_runner.py" in "".join(
            traceback.format_exception(*r.exc_info))] == []
        assert [r for r in caplog.records if r.name == "asyncio"] == []


async def test_a_turn_end_the_full_disk_refused_is_recorded_with_the_next_turns_end_once_there_is_room(
        tmp_path, caplog):
    # The turn of "second", queued behind "first", begins on the full disk that refused the end of "first";
    # there is room by the time it ends: its end records that of "first" first, in the same commit as its own.
    model = ScriptedModel({"parent": answers})
    async with web_chats(tmp_path) as start, aiohttp.ClientSession() as http:
        web = await start(agent_model=model, display={"busy_input_mode": "queue"})
        gateway = web.gateway
        assert (await post_message(http, web.base, "c1", "first", key="key-first-1"))[0] == 202
        await model.reached("first")
        assert (await post_message(http, web.base, "c1", "second", key="key-second-1"))[0] == 202
        await disk_full(gateway.store.db)
        model.release("first")
        await model.reached("second")
        assert not gateway.store.inbox.settled("web", "key-first-1@c1")
        room_again(gateway.store.db)
        # Not the retention sweep's to record while "second" runs: the transcript holds that turn, half done.
        session = next(iter(gateway.sessions))
        gateway.retention.sweep()
        assert session.owed and not gateway.store.inbox.settled("web", "key-first-1@c1")
        model.release("second")
        await answered(http, web.base, "echo: second")
        await web.settled()
        assert gateway.store.inbox.settled("web", "key-first-1@c1")
        assert await texts(http, web.base) == ["first", "second", "long answer to first", "echo: second"]
        assert stored(gateway) == ["first", "second"]
        assert not next(iter(gateway.sessions)).owed
        no_tracebacks(caplog)

        await web.restart()
        await web.settled()
        assert stored(web.gateway) == ["first", "second"]
        assert await texts(http, web.base) == ["first", "second", "long answer to first", "echo: second"]


async def test_new_after_a_turn_end_the_full_disk_refused_records_it_in_the_old_session(tmp_path, caplog):
    # `/new` guarantees that nothing of the old session reaches the new one. The message whose turn's end
    # the full disk refused is settled by the `/new`, with the old session's transcript and the turn's
    # reply, sent then: a restart does not answer it again in the new session.
    model = ScriptedModel({"parent": answers})
    async with web_chats(tmp_path) as start, aiohttp.ClientSession() as http:
        web = await start(agent_model=model)
        gateway = web.gateway
        await first_ended_on_a_full_disk(http, web, model)
        room_again(gateway.store.db)
        assert (await post_message(http, web.base, "c1", "/new", key="key-new-1"))[0] == 202
        await answered(http, web.base, "Started a new sessio")
        await web.settled()
        assert gateway.store.inbox.settled("web", "key-first-1@c1")
        assert await texts(http, web.base) == ["first", "/new", "long answer to first", "Started a new sessio"]
        assert stored(gateway) == []

        await web.restart()  # before, it answered "first" again, in the new session, whose transcript began with it
        await web.settled()
        assert stored(web.gateway) == []
        assert await texts(http, web.base) == ["first", "/new", "long answer to first", "Started a new sessio"]
        no_tracebacks(caplog)


async def test_new_on_a_disk_still_full_leaves_the_turn_end_owed_to_the_new_sessions_first_turn(tmp_path, caplog):
    # The /new cannot record the owed end of "first" (the disk is still full), but its own rows fit: the new
    # session starts. Once there is room, its first turn pays that end before it begins: the reply of "first"
    # goes out and its message is settled, while the new session's transcript stays its own.
    model = ScriptedModel({"parent": answers})
    async with web_chats(tmp_path) as start, aiohttp.ClientSession() as http:
        web = await start(agent_model=model)
        gateway = web.gateway
        await first_ended_on_a_full_disk(http, web, model)
        assert (await post_message(http, web.base, "c1", "/new", key="key-new-1"))[0] == 202
        await answered(http, web.base, "Started a new sessio")
        said = [r.getMessage() for r in caplog.records if r.name == "gateway.turn_runner"]
        assert said[-1].startswith("could not record all that a stop (/new) ended in web chat c1")
        assert "not recorded: the end of turn " in said[-1] and "(its reply)" in said[-1]
        assert not gateway.store.inbox.settled("web", "key-first-1@c1")

        room_again(gateway.store.db)
        assert (await post_message(http, web.base, "c1", "hello", key="key-hello-1"))[0] == 202
        await answered(http, web.base, "echo: hello")
        await web.settled()
        assert gateway.store.inbox.settled("web", "key-first-1@c1")
        assert await texts(http, web.base) == [
            "first", "/new", "Started a new sessio", "hello", "long answer to first", "echo: hello"]
        assert stored(gateway) == ["hello"]

        await web.restart()
        await web.settled()
        assert stored(web.gateway) == ["hello"]
        assert await texts(http, web.base) == [
            "first", "/new", "Started a new sessio", "hello", "long answer to first", "echo: hello"]
        no_tracebacks(caplog)


@pytest.mark.parametrize("then", ["restart", "sweep"])
async def test_a_settling_refused_after_the_transcript_went_through_leaves_the_transcript_out_too(
        tmp_path, caplog, then):
    # The end of "first" stores its transcript, then the store refuses its message's settling, rolling the whole
    # batch back as a full disk does (a trigger stands in for the full disk: the update in place that settles a
    # message fits where a new page would not). Before, the transcript's writes, taken for done, were written
    # again on their own: the process stopping before the end was paid, the restart ran "first" again on a
    # transcript that already held it, and stored it twice. Paid before a restart, the transcript is stored
    # then, with the settling.
    model = ScriptedModel({"parent": answers})
    async with web_chats(tmp_path) as start, aiohttp.ClientSession() as http:
        web = await start(agent_model=model)
        gateway = web.gateway
        db = gateway.store.db
        assert (await post_message(http, web.base, "c1", "first", key="key-first-1"))[0] == 202
        await model.reached("first")  # its message is marked begun: the next update of the inbox settles it
        await db.durable()
        db._conn.execute("CREATE TEMP TRIGGER no_settling BEFORE UPDATE ON gateway_inbox"
                         " BEGIN SELECT RAISE(ROLLBACK, 'database or disk is full'); END")
        model.release("first")
        await answered(http, web.base, "long answer to first")
        await until(lambda: not gateway.runner.busy)
        assert next(iter(gateway.sessions)).owed
        db._conn.execute("DROP TRIGGER temp.no_settling")
        said = [r.getMessage() for r in caplog.records if r.name == "gateway.turn_runner"]
        assert len(said) == 1 and "not recorded: its messages' settling" in said[0]
        if then == "sweep":
            gateway.retention.sweep()
            await web.settled()
            assert stored(gateway) == ["first"] and gateway.store.inbox.settled("web", "key-first-1@c1")

        await web.restart()  # the end still owed: "first" runs again, as after a crash; paid: nothing does
        await web.settled()
        assert stored(web.gateway) == ["first"]  # before, ["first", "first"]
        assert web.gateway.store.inbox.settled("web", "key-first-1@c1")
        assert await texts(http, web.base) == ["first", "long answer to first"]  # its reply is not sent twice


async def test_an_idle_chats_owed_turn_end_is_recorded_by_the_retention_sweep_once_there_is_room(tmp_path, caplog):
    # Before, the end of "first" waited for the chat's next message (or a restart): its answer with it.
    model = ScriptedModel({"parent": answers})
    async with web_chats(tmp_path) as start, aiohttp.ClientSession() as http:
        web = await start(agent_model=model)
        gateway = web.gateway
        session = await first_ended_on_a_full_disk(http, web, model)
        gateway.retention.sweep()  # the disk still full: still owed, said in one line
        assert session.owed and gateway.sessions.find("web", "c1", None) is session
        said = [r.getMessage() for r in caplog.records if r.name == "gateway.turn_runner"]
        assert said[-1].startswith("could not record the turn ends 1 idle chat(s) owe (OperationalError: database"
                                   " or disk is full; not recorded, of the end of turn t-")
        assert said[-1].endswith(": its reply): tried again at the next retention sweep, or with the chat's next turn")

        room_again(gateway.store.db)
        gateway.retention.sweep()
        assert not session.owed
        await answered(http, web.base, "long answer to first")
        await web.settled()
        assert gateway.store.inbox.settled("web", "key-first-1@c1")
        assert stored(gateway) == ["first"]
        gateway.retention.sweep()  # paid once: nothing more to record
        await web.settled()
        assert await texts(http, web.base) == ["first", "long answer to first"]
        no_tracebacks(caplog)

        await web.restart()  # nothing runs again
        await web.settled()
        assert stored(web.gateway) == ["first"]
        assert await texts(http, web.base) == ["first", "long answer to first"]
