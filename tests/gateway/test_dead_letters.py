"""An event the gateway cannot handle: tried again, then set aside with an apology, never
replayed into a failing start; `switchboard inbox dead` / `inbox retry` hand it back."""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import sqlite3
import time

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway import state_lock
from gateway.cli import main
from gateway.dead_letters import APOLOGY, CUT_SHORT, REQUEUE_POLL_SECONDS
from gateway.host import STATE_DB
from gateway.questions import question_text
from gateway.store import GatewayStore, session_key
from gateway.testing import RecordingAdapter, make_config, settled
from tests.asking_model import CHOICES, asking_parent
from tests.hanging_children import HANGING_CHILDREN, delegating_parent, hanging_child
from tests.plugin_modules import plugin_module


def break_new_sessions(gateway):
    """The state database refuses to store a new session, as a full disk would."""

    def refuse(row):
        raise sqlite3.OperationalError("database or disk is full")

    gateway.store.sessions.save = refuse


async def test_a_failing_event_is_tried_again_then_set_aside_with_an_apology(tmp_path, gateways, caplog):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    config = make_config(tmp_path)
    gateway = await gateways(config, [chat], script={"parent": [[{"text": "never"}]]}, clock=clock)
    break_new_sessions(gateway)
    accepted = await chat.say("hello", chat="c9", event_id="ev-poison")
    assert accepted.turn_id is not None  # accepted: the platform is not asked to send it again
    for pause in (0.5, 1.0):  # tried again after a pause that doubles
        await clock.until_sleeping(lasting=pause)
        assert chat.messages == []
        clock.advance(pause)
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == [APOLOGY]
    [letter] = gateway.store.dead_letters.all()
    assert (letter.platform, letter.event_id, letter.attempts) == ("chat", "ev-poison", 3)
    assert "disk is full" in letter.error and letter.text == "hello"
    errors = [r for r in caplog.records if r.levelname == "ERROR" and "dead letter" in r.getMessage()]
    assert len(errors) == 1  # logged once
    again = await chat.say("hello", chat="c9", event_id="ev-poison")
    assert again.duplicate  # still known: a redelivery is not a new event


async def test_in_a_group_the_apology_for_a_message_set_aside_quotes_it(tmp_path, gateways):
    # Several members ask there: unquoted, the apology would be for nobody's message in particular.
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, inbox={"max_attempts": 1}), [chat],
                             script={"parent": [[{"text": "never"}]]})
    break_new_sessions(gateway)
    await chat.say("hello", chat="c9", private=False, message_id="m-3")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert [(m.text, m.outbound.reply_to) for m in chat.messages] == [(APOLOGY, "m-3")]


async def test_a_dead_letter_never_stops_a_start_and_retry_hands_it_back(tmp_path, gateways, capsys):
    chat = RecordingAdapter()
    config = make_config(tmp_path, inbox={"max_attempts": 1})
    gateway = await gateways(config, [chat], script={"parent": [[{"text": "never"}]]})
    break_new_sessions(gateway)
    await chat.say("please answer", chat="c9", event_id="ev-1")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    await gateway.stop(grace=0)

    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], script={"parent": [[{"text": "answered at last"}]]})
    await settled(gateway2)
    assert chat2.messages == []  # set aside: not replayed at start

    config_file = tmp_path / "switchboard.yaml"
    config_file.write_text(f"state_dir: {config.state_dir}\n")
    # The CLI is another process in real life: here a thread, with no event loop of its own.
    cli = lambda *args: asyncio.to_thread(main, [*args, "--config", str(config_file)])  # noqa: E731
    assert await cli("inbox", "dead") == 0
    listing = capsys.readouterr().out
    assert "chat chat c9" in listing and "event ev-1" in listing and "'please answer'" in listing
    lock = state_lock.hold(config.state_dir)  # as `switchboard run` holds it
    try:
        assert await cli("inbox", "retry", "1") == 0
    finally:
        lock.release()
    assert "re-queued chat event ev-1: the running gateway takes it up" in capsys.readouterr().out
    await chat2.wait_for(lambda: chat2.messages, timeout=10)  # the running gateway takes it up
    assert chat2.texts() == ["answered at last"]
    assert await cli("inbox", "retry", "1") == 1
    assert "no dead letter 1" in capsys.readouterr().err
    assert await cli("inbox", "dead") == 0
    assert capsys.readouterr().out.strip() == "no dead letters"


async def test_a_handed_back_event_whose_failure_cannot_be_recorded_keeps_no_other_waiting(tmp_path, gateways):
    # Events handed back are taken up together: one whose handling fails and whose failure the store
    # refuses to count (a full disk) left the others taken, unhandled, until the next start.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path, inbox={"max_attempts": 1}), [chat], clock=clock,
                             script={"parent": [[{"text": "answered c2"}]]})
    save, failed = gateway.store.sessions.save, gateway.store.inbox.failed
    break_new_sessions(gateway)
    await chat.say("first", chat="c1", event_id="ev-1")
    await chat.say("second", chat="c2", event_id="ev-2")
    await settled(gateway)
    assert [d.event_id for d in gateway.store.dead_letters.all()] == ["ev-1", "ev-2"]
    chat.messages.clear()  # the apologies

    def save_but_c1(row):
        if row.key == session_key("chat", "c1", None):
            raise sqlite3.OperationalError("database or disk is full")
        return save(row)

    def fail_but_not_record_ev1(platform, event_id, error):
        if event_id == "ev-1":
            raise sqlite3.OperationalError("database or disk is full")
        return failed(platform, event_id, error)

    gateway.store.sessions.save = save_but_c1
    gateway.store.inbox.failed = fail_but_not_record_ev1
    for letter in gateway.store.dead_letters.all():  # as `switchboard inbox retry` does
        gateway.store.dead_letters.retry(letter.id, gateway.store.inbox.requeue)
    await clock.until_sleeping(lasting=REQUEUE_POLL_SECONDS)
    clock.advance(REQUEUE_POLL_SECONDS)
    await chat.wait_for(lambda: chat.texts() == ["answered c2"])
    assert not gateway.store.inbox.settled("chat", "ev-1")  # kept, unsettled, for the next start


def test_inbox_commands_on_a_state_dir_that_has_nothing(tmp_path):
    config_file = tmp_path / "switchboard.yaml"
    config_file.write_text(f"state_dir: {tmp_path / 'empty'}\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["--config", str(config_file), "inbox", "dead"]) == 1
    assert "nothing has been received yet" in err.getvalue()


def test_inbox_commands_leave_a_log_whose_database_is_gone_as_they_found_it(tmp_path):
    """An empty database beside a -wal holding its last commits (a moved or truncated database):
    refused as a start refuses it, never given a fresh schema that deletes the -wal."""
    state = tmp_path / "state"
    state.mkdir()
    (state / STATE_DB).write_bytes(b"")
    wal = state / f"{STATE_DB}-wal"
    wal.write_bytes(b"the last commits")
    config_file = tmp_path / "switchboard.yaml"
    config_file.write_text(f"state_dir: {state}\n")
    for command in (["inbox", "dead"], ["inbox", "retry", "1"]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            assert main(["--config", str(config_file), *command]) == 1
        assert "holds the last commits of a database" in err.getvalue()
    assert wal.read_bytes() == b"the last commits" and (state / STATE_DB).stat().st_size == 0


def test_inbox_retry_of_an_id_too_large_for_the_database_is_a_usage_error(tmp_path, capsys):
    config_file = tmp_path / "switchboard.yaml"
    config_file.write_text(f"state_dir: {tmp_path / 'state'}\n")
    (tmp_path / "state").mkdir()
    GatewayStore(tmp_path / "state" / STATE_DB).close()
    with pytest.raises(SystemExit) as usage:  # it was a traceback: SQLite holds 64-bit integers only
        main(["--config", str(config_file), "inbox", "retry", str(2**63)])
    assert usage.value.code == 2
    assert (f"argument ID: '{2**63}' is not a dead letter id: ids are the numbers `switchboard inbox dead` lists"
            in capsys.readouterr().err)
    assert main(["--config", str(config_file), "inbox", "retry", str(2**63 - 1)]) == 1
    assert f"no dead letter {2**63 - 1}" in capsys.readouterr().err


def attempts_of(tmp_path, event_id: str) -> int:
    with contextlib.closing(sqlite3.connect(tmp_path / "state" / "switchboard.db")) as db:
        return db.execute("SELECT attempts FROM gateway_inbox WHERE event_id=?", (event_id,)).fetchone()[0]


def died(tmp_path) -> None:
    """Leave the state as a gateway killed mid-run leaves it: not marked as stopped cleanly."""
    with contextlib.closing(sqlite3.connect(tmp_path / "state" / "switchboard.db")) as db, db:
        db.execute("UPDATE gateway_meta SET value='0' WHERE key='stopped_cleanly'")


async def test_an_event_a_gateway_died_on_counts_as_a_failed_attempt_and_a_clean_stop_does_not(tmp_path, gateways):
    # An event that kills the process (memory, a native crash) must not be replayed into every start.
    config = make_config(tmp_path, inbox={"max_attempts": 2})

    async def run_until_the_model_is_called(cut_short: bool, say: bool = False) -> RecordingAdapter:
        chat, model = RecordingAdapter(), ScriptedModel({"parent": [[{"wait": "forever"}]]})
        gateway = await gateways(config, [chat], model=model)
        if say:
            await chat.say("this one brings it down", chat="c1", event_id="ev-poison")
        await model.reached("forever")
        await gateway.stop(grace=0)  # the turn is left unsettled, to run again at the next start
        if cut_short:
            died(tmp_path)
        return chat

    await run_until_the_model_is_called(cut_short=False, say=True)
    await run_until_the_model_is_called(cut_short=True)  # replayed after a clean stop: no attempt charged
    assert attempts_of(tmp_path, "ev-poison") == 0
    await run_until_the_model_is_called(cut_short=True)  # replayed after the first death: attempt 1 of 2
    assert attempts_of(tmp_path, "ev-poison") == 1
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], script={"parent": [[{"text": "never run"}]]})
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == [APOLOGY]
    [letter] = gateway.store.dead_letters.all()
    assert (letter.event_id, letter.attempts, letter.error) == ("ev-poison", 2, CUT_SHORT)


REFUSE = {  # the write a full disk would refuse, refused by the database itself for that one statement
    "attempt": "CREATE TRIGGER refuse BEFORE UPDATE OF attempts ON gateway_inbox"
               " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
    "dead letter": "CREATE TRIGGER refuse BEFORE INSERT ON gateway_dead_letters"
                   " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
}


def execute(tmp_path, statement: str) -> None:
    with contextlib.closing(sqlite3.connect(tmp_path / "state" / "switchboard.db")) as db, db:
        db.execute(statement)


def echo(request) -> dict:
    return {"text": f"re: {request.messages[-1]['content']}"}


@pytest.mark.parametrize("refused", ["attempt", "dead letter"])
async def test_a_start_that_cannot_record_a_cut_short_event_serves_and_keeps_the_event(
    tmp_path, gateways, caplog, refused
):
    config = make_config(tmp_path, inbox={"max_attempts": 2 if refused == "attempt" else 1})
    chat, model = RecordingAdapter(), ScriptedModel({"parent": [[{"wait": "forever"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("this one brings it down", chat="c1", event_id="ev-poison")
    await model.reached("forever")
    await gateway.stop(grace=0)
    died(tmp_path)
    execute(tmp_path, REFUSE[refused])

    caplog.set_level(logging.ERROR, logger="gateway.dead_letters")
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], script={"parent": echo})  # starts all the same
    await chat.say("are you there?", chat="c2")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == ["re: are you there?"]  # serving; the event it could not count is not run
    [error] = [r.getMessage() for r in caplog.records if "ev-poison" in r.getMessage()]
    assert f"refused to record the {refused}" in error and "database or disk is full" in error
    assert "kept for the next start" in error
    assert [(e.event_id, e.text) for e, _ in gateway.store.inbox.unfinished()] == [
        ("ev-poison", "this one brings it down")]
    assert gateway.store.dead_letters.all() == []
    await gateway.stop(grace=0)

    execute(tmp_path, "DROP TRIGGER refuse")  # room again: the next start takes it up
    chat = RecordingAdapter()
    await gateways(config, [chat], script={"parent": echo})
    await chat.wait_for(lambda: chat.messages)
    assert chat.texts() == ["re: this one brings it down"]


async def test_an_event_a_start_could_not_count_is_counted_after_the_next_death(tmp_path, gateways):
    # Kept for the next start as it was: the death it brought about still uncounted, it must not be
    # replayed uncounted after the next one (here an unrelated one, while it waited).
    config = make_config(tmp_path, inbox={"max_attempts": 2})
    model = ScriptedModel({"parent": [[{"wait": "forever"}]]})
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], model=model)
    await chat.say("this one brings it down", chat="c1", event_id="ev-poison")
    await model.reached("forever")
    await gateway.stop(grace=0)
    died(tmp_path)
    execute(tmp_path, REFUSE["attempt"])
    gateway = await gateways(config, [RecordingAdapter()], script={"parent": echo})  # cannot count it
    await gateway.stop(grace=0)
    died(tmp_path)
    execute(tmp_path, "DROP TRIGGER refuse")
    chat = RecordingAdapter()
    await gateways(config, [chat], script={"parent": echo})
    await chat.wait_for(lambda: chat.messages)
    assert chat.texts() == ["re: this one brings it down"]
    assert attempts_of(tmp_path, "ev-poison") == 1


async def test_a_death_charges_the_running_turns_event_not_the_messages_queued_behind_it(tmp_path, gateways):
    # With slow turns and a backlog, unrelated deaths must not set aside messages whose turns never began.
    config = make_config(tmp_path, inbox={"max_attempts": 2}, display={"busy_input_mode": "queue"})

    def stuck_on_the_first(request) -> dict:
        text = request.messages[-1]["content"]
        return {"wait": "forever"} if text == "this one brings it down" else {"text": f"re: {text}"}

    async def die_while_the_first_runs(say: bool = False) -> None:
        chat, model = RecordingAdapter(), ScriptedModel({"parent": stuck_on_the_first})
        gateway = await gateways(config, [chat], model=model)
        if say:
            await chat.say("this one brings it down", chat="c1", event_id="ev-poison")
        await model.reached("forever")
        if say:  # queued behind the running turn
            await chat.say("hello", chat="c1", event_id="ev-hello")
            await chat.say("how are you?", chat="c1", event_id="ev-how")
        await gateway.stop(grace=0)
        died(tmp_path)
        assert chat.messages == []

    await die_while_the_first_runs(say=True)
    await die_while_the_first_runs()  # the running turn's event: attempt 1 of 2; the queued ones: none
    assert [attempts_of(tmp_path, e) for e in ("ev-poison", "ev-hello", "ev-how")] == [1, 0, 0]
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], script={"parent": echo})
    await chat.wait_for(lambda: len(chat.messages) >= 3)
    await settled(gateway)
    assert chat.texts() == [APOLOGY, "re: hello", "re: how are you?"]  # each answered once
    [letter] = gateway.store.dead_letters.all()
    assert (letter.event_id, letter.attempts, letter.error) == ("ev-poison", 2, CUT_SHORT)
    assert gateway.store.inbox.unfinished() == []


async def test_a_message_steered_into_the_turn_a_gateway_died_in_is_charged_too(tmp_path, gateways):
    # Handed to the running turn, it is part of what the process was doing when it died.
    config = make_config(tmp_path, inbox={"max_attempts": 2}, display={"busy_input_mode": "steer"})
    chat, model = RecordingAdapter(), ScriptedModel({"parent": [[{"wait": "forever"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("this one brings it down", chat="c1", event_id="ev-poison")
    await model.reached("forever")
    await chat.say("and mind this", chat="c1", event_id="ev-steered")
    assert gateway.sessions.find("chat", "c1", None).running.steered  # steered, not queued
    await gateway.stop(grace=0)
    died(tmp_path)
    model = ScriptedModel({"parent": [[{"wait": "forever"}]]})
    await gateways(config, [RecordingAdapter()], model=model)
    await model.reached("forever")
    assert [attempts_of(tmp_path, e) for e in ("ev-poison", "ev-steered")] == [1, 1]


async def test_a_death_while_a_plugin_command_runs_is_charged_to_it(tmp_path, gateways, monkeypatch):
    # Run beside the chat's queue, it waits for nothing: its handler is what the process was doing.
    plugin_module(tmp_path, monkeypatch, "dying_plugin",
                  "import asyncio\n\nasync def report(args, context):\n    await asyncio.Event().wait()\n\n"
                  "def register(ctx):\n    ctx.register_command('report', report)\n")
    config = make_config(tmp_path, plugins=["dying_plugin"])
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], script={"parent": [[{"text": "x"}]]})
    await chat.say("/report", event_id="ev-report")
    await gateway.stop(grace=0)
    died(tmp_path)
    await gateways(config, [RecordingAdapter()], script={"parent": [[{"text": "x"}]]})
    assert attempts_of(tmp_path, "ev-report") == 1


def killed_now(tmp_path):
    """The state a SIGKILL now would leave, what is committed: call the result once the gateway has
    stopped to put that state back in its place."""
    db = tmp_path / "state" / "switchboard.db"
    snapshot = tmp_path / "killed.db"
    with contextlib.closing(sqlite3.connect(db)) as source, contextlib.closing(sqlite3.connect(snapshot)) as kept:
        source.backup(kept)

    def restore() -> None:
        for log in (db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
            log.unlink(missing_ok=True)
        snapshot.replace(db)

    return restore


@pytest.mark.parametrize("command", ["/new", "/new plan the trip"])
async def test_a_death_while_a_built_in_command_runs_is_charged_to_it(tmp_path, gateways, command):
    # /new (as /stop) waits for the `subagent_stop` hooks of the children it withdraws, plugins' code,
    # queued behind nothing, as a plugin's command does: a hook that brings the process down must not
    # have its /new replayed uncounted into every start.
    # The second child waits for a slot: /new withdraws it, and waits for its hook, before it answers.
    config = make_config(tmp_path, inbox={"max_attempts": 2}, lifecycle={"max_running": 1})
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": delegating_parent, "leaf": hanging_child})
    gateway = await gateways(config, [chat], model=model)
    reached, release = asyncio.Event(), asyncio.Event()

    async def deadly_bookkeeping(**event):
        reached.set()
        await release.wait()

    gateway.host.hooks.register("subagent_stop", deadly_bookkeeping, owner="ledger_plugin")
    await chat.say("please delegate")
    await model.reached(HANGING_CHILDREN["tasks"][0]["goal"])
    new = asyncio.ensure_future(chat.say(command, event_id="ev-new"))
    await reached.wait()
    assert not gateway.store.inbox.settled("chat", "ev-new")  # /new waits for the hook
    restore = killed_now(tmp_path)  # the process dies in the hook
    release.set()
    await new
    await gateway.stop(grace=0)
    restore()
    chat = RecordingAdapter()
    await gateways(config, [chat], script={"parent": echo})
    answers = ["Started a new session. Delegation here is background."]
    if command != "/new":
        answers.append("re: plan the trip")
    await chat.wait_for(lambda: len(chat.messages) == len(answers))
    assert chat.texts() == answers  # handled again, once
    assert attempts_of(tmp_path, "ev-new") == 1


async def test_the_text_after_a_new_waiting_for_its_turn_is_not_charged_with_a_death(tmp_path, gateways):
    # /new sent before the message being answered now (handed over after it) leaves that turn going on:
    # its text waits for its turn, as a message queued behind a slow turn does, and counts nothing.
    config = make_config(tmp_path, inbox={"max_attempts": 2})
    chat, model = RecordingAdapter(), ScriptedModel({"parent": [[{"wait": "forever"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("this one brings it down", chat="c1", event_id="ev-poison", sent_at=1_700_000_100.0)
    await model.reached("forever")
    await chat.say("/new plan the trip", chat="c1", event_id="ev-new", sent_at=1_700_000_000.0)
    assert gateway.store.outbox.message("cmd-chat-ev-new:0") is not None  # answered: it started nothing
    await gateway.stop(grace=0)
    died(tmp_path)
    await gateways(config, [RecordingAdapter()], model=ScriptedModel({"parent": [[{"wait": "forever"}]]}))
    assert [attempts_of(tmp_path, e) for e in ("ev-poison", "ev-new")] == [1, 0]


@pytest.mark.parametrize("stop", ["console", "/stop sent before it"])
async def test_a_steered_message_a_stop_put_back_is_not_charged_with_the_stopped_turns_wind_down(tmp_path, gateways,
                                                                                                 stop):
    # A stop before the turn read it (the operator console's, or a /stop the user sent before it, handed
    # over after it): it waits for a turn of its own again, while the stopped turn winds down (a plugin's
    # turn_end hook); a death then is no part of it.
    config = make_config(tmp_path, inbox={"max_attempts": 2}, display={"busy_input_mode": "steer"})
    chat, model = RecordingAdapter(), ScriptedModel({"parent": [[{"wait": "forever"}]]})
    gateway = await gateways(config, [chat], model=model)
    winding_down = asyncio.Event()

    async def slow_tidy_up(**event):
        winding_down.set()
        await asyncio.Event().wait()

    gateway.host.hooks.register("turn_end", slow_tidy_up, owner="tidy_plugin")
    await chat.say("this one runs", chat="c1", event_id="ev-running")
    await model.reached("forever")
    now = time.time()
    await chat.say("and mind this", chat="c1", event_id="ev-steered", sent_at=now)
    session = gateway.sessions.find("chat", "c1", None)
    if stop == "console":
        assert gateway.sessions.stop_turn(session, "stopped from the operator console", why="console")
    else:
        await chat.say("/stop", chat="c1", event_id="ev-stop", sent_at=now - 5)
    async with asyncio.timeout(5):
        await winding_down.wait()
    assert session.running is not None and [item.event.event_id for item in session.queue] == ["ev-steered"]
    await gateway.store.durable()
    await gateway.stop(grace=0)
    died(tmp_path)
    await gateways(config, [RecordingAdapter()], script={"parent": echo})
    assert attempts_of(tmp_path, "ev-steered") == 0


QUESTION = question_text("Which environment?", CHOICES, 600)


def asking_then_going_on(request) -> dict:
    """`asking_parent`, whose call with the answer waits (at ``answered``) for good."""
    step = asking_parent(request)
    return {**step, "wait": "answered"} if request.messages[-1]["role"] == "tool" else step


async def killed_then_asking(tmp_path, gateways, gateway, config, clock) -> RecordingAdapter:
    """The chat of a gateway started after ``gateway`` is killed now (what is committed is what it left),
    once the parent that asks has said something there."""
    await gateway.store.durable()
    restore = killed_now(tmp_path)
    await gateway.stop(grace=0)
    restore()
    chat = RecordingAdapter()
    await gateways(config, [chat], model=ScriptedModel({"parent": asking_parent}), clock=clock)
    await chat.wait_for(lambda: chat.texts())
    return chat


@pytest.mark.parametrize("death", ["while the question waits", "after the answer"])
async def test_a_turn_waiting_for_the_answer_to_its_question_is_not_charged_with_a_death_then(tmp_path, gateways,
                                                                                              death):
    # The user may think it over for hours: a death then (another chat's poison message, an OOM, a reboot)
    # is no fault of the idle turn, nor of a message steered into it. From the answer on, the turn
    # works again: a death is charged to its messages, not to the answer, which was handed over.
    config = make_config(tmp_path, inbox={"max_attempts": 2}, display={"busy_input_mode": "steer"})
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": asking_then_going_on})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("please deploy the app", event_id="ev-asks", sent_at=clock.time() - 60)
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    # Sent before the question was asked (both handed over after a start): not its answer, but a steer.
    await chat.say("and check the logs", event_id="ev-steered", sent_at=clock.time() - 59)
    running = gateway.sessions.find("chat", "c1", None).running
    assert running.question is not None and [item.event.event_id for item in running.steered] == ["ev-steered"]
    if death == "after the answer":
        await chat.say("2", event_id="ev-answer")
        await model.reached("answered")
    chat = await killed_then_asking(tmp_path, gateways, gateway, config, clock)
    assert chat.texts()[0] == QUESTION  # the turn runs again and asks again; no apology
    charged = 0 if death == "while the question waits" else 1
    assert [attempts_of(tmp_path, e) for e in ("ev-asks", "ev-steered")] == [charged, charged]
    if death == "after the answer":
        assert attempts_of(tmp_path, "ev-answer") == 0


def delegating_then_asking(request) -> dict:
    """Launches a child in the background (it waits in its model call for good), then asks."""
    if request.role == "leaf":
        return {"wait": "the child runs"}
    answered = [m for m in request.messages if m["role"] == "tool"]
    if not answered:
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "read the logs"}}]}
    if len(answered) == 1:
        return {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?",
                                                                  "choices": CHOICES}}]}
    return {"text": f"deploying to: {answered[-1]['content']}"}


async def test_a_turn_whose_children_run_here_while_it_waits_for_an_answer_is_charged_with_a_death(tmp_path,
                                                                                                  gateways):
    # Its children run in this process meanwhile: they may be what brought it down, and a turn run again
    # launches them again, so an uncharged death could repeat at every start.
    config = make_config(tmp_path, inbox={"max_attempts": 2}, delegation={"gateway_mode": "background"})
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": delegating_then_asking, "leaf": delegating_then_asking})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("please deploy the app", event_id="ev-asks")
    await model.reached("the child runs")
    await chat.wait_for(lambda: QUESTION in chat.texts())
    chat = await killed_then_asking(tmp_path, gateways, gateway, config, clock)
    assert chat.texts()[0] == QUESTION
    assert attempts_of(tmp_path, "ev-asks") == 1
