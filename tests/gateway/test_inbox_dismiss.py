"""`switchboard inbox dismiss ID`: an operator without the console drops a dead letter they will not have
handled, as the console's Dismiss does; listed forever, it hid the letters that still wanted a look. It is
as careful with the database as `inbox retry`, and works while a gateway runs."""

from __future__ import annotations

import asyncio
import contextlib
import io

import pytest

from gateway import state_lock
from gateway.cli import EXIT_CONFIG, main
from gateway.dead_letters import APOLOGY
from gateway.host import STATE_DB
from gateway.store import SCHEMA_VERSION
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.cli_process import problem_lines, run
from tests.gateway.test_dead_letters import break_new_sessions
from tests.gateway.test_inbox_cli import a_dead_letter
from tests.gateway.test_inbox_read_only import as_an_older_version_left_it

DISMISSED = "dismissed chat event ev-1: it will not be handled\n"
NO_LETTER = "switchboard: no dead letter 1; `switchboard inbox dead` lists them\n"


@pytest.fixture
def state(tmp_path):
    a_dead_letter(tmp_path / "state")
    return tmp_path / "state"


@pytest.fixture
def config_file(tmp_path, state):
    path = tmp_path / "switchboard.yaml"
    path.write_text(f"state_dir: {state}\n")
    return path


async def test_dismiss_while_the_gateway_runs_forgets_the_letter_and_its_event_stays_a_duplicate(
        tmp_path, gateways, capsys):
    chat = RecordingAdapter()
    config = make_config(tmp_path, inbox={"max_attempts": 1})
    gateway = await gateways(config, [chat], script={"parent": [[{"text": "never"}]]})
    break_new_sessions(gateway)
    await chat.say("please answer", chat="c9", event_id="ev-1")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == [APOLOGY]
    config_file = tmp_path / "switchboard.yaml"
    config_file.write_text(f"state_dir: {config.state_dir}\n")
    # The CLI is another process in real life: here a thread, with no event loop of its own.
    cli = lambda *args: asyncio.to_thread(main, [*args, "--config", str(config_file)])  # noqa: E731
    lock = state_lock.hold(config.state_dir)  # as `switchboard run` holds it
    try:
        assert await cli("inbox", "dismiss", "1") == 0
    finally:
        lock.release()
    assert capsys.readouterr().out == DISMISSED
    assert gateway.store.dead_letters.all() == []
    assert gateway.store.inbox.take_requeued() == []  # forgotten, not handed back
    again = await chat.say("please answer", chat="c9", event_id="ev-1")
    assert again.duplicate  # its event is still known: a redelivery is not handled either
    await settled(gateway)
    assert chat.texts() == [APOLOGY]  # no second apology, no answer
    assert await cli("inbox", "dismiss", "1") == 1
    assert capsys.readouterr().err == NO_LETTER
    assert await cli("inbox", "dead") == 0
    assert capsys.readouterr().out.strip() == "no dead letters"


def test_the_listing_names_dismiss_beside_retry(config_file, capsys):
    assert main(["--config", str(config_file), "inbox", "dead"]) == 0
    assert capsys.readouterr().out.endswith(
        "`switchboard inbox retry ID` hands one back to the gateway, `switchboard inbox dismiss ID` drops it"
        " (1 dead letters)\n")


def test_dismiss_refuses_a_newer_versions_database_unchanged(state, config_file, capsys):
    db = state / STATE_DB
    as_an_older_version_left_it(db, SCHEMA_VERSION + 1)
    before = db.read_bytes()
    assert main(["--config", str(config_file), "inbox", "dismiss", "1"]) == EXIT_CONFIG
    assert capsys.readouterr().err.startswith(f"switchboard: state database {db} was written by a newer switchboard")
    assert db.read_bytes() == before


def test_dismiss_leaves_a_log_whose_database_is_gone_as_it_found_it(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / STATE_DB).write_bytes(b"")
    wal = state / f"{STATE_DB}-wal"
    wal.write_bytes(b"the last commits")
    config_file = tmp_path / "switchboard.yaml"
    config_file.write_text(f"state_dir: {state}\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["--config", str(config_file), "inbox", "dismiss", "1"]) == 1
    assert "holds the last commits of a database" in err.getvalue()
    assert wal.read_bytes() == b"the last commits" and (state / STATE_DB).stat().st_size == 0


@pytest.mark.parametrize("typed", ["abc", str(2**63)])
def test_a_dismissed_id_that_is_no_letters_says_what_an_id_is(config_file, capsys, typed):
    with pytest.raises(SystemExit) as usage:
        main(["--config", str(config_file), "inbox", "dismiss", typed])
    assert usage.value.code == 2
    assert (f"argument ID: {typed!r} is not a dead letter id: ids are the numbers `switchboard inbox dead` lists"
            in capsys.readouterr().err)


def test_the_real_command_dismisses_once_and_then_names_the_id_it_does_not_know(tmp_path, config_file):
    first = run(tmp_path, "inbox", "dismiss", "1", "--config", str(config_file))
    assert (first.returncode, first.stdout) == (0, DISMISSED), first.stderr
    assert not problem_lines(first.stderr), first.stderr
    second = run(tmp_path, "inbox", "dismiss", "1", "--config", str(config_file))
    assert (second.returncode, second.stdout, problem_lines(second.stderr)) == (1, "", [NO_LETTER.strip()])
    listing = run(tmp_path, "inbox", "dead", "--config", str(config_file))
    assert (listing.returncode, listing.stdout) == (0, "no dead letters\n"), listing.stderr
