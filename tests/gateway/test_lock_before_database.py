"""A start on the state directory of a running gateway is refused by the directory's lock before it opens
the database: it neither reads the live database (its check reads every page, about a second per GB) nor
blames what it finds there on the file, telling the operator to move the running gateway's database or
its ``-wal`` away."""

from __future__ import annotations

import os
import sqlite3

import pytest

from gateway import cli
from gateway.state_lock import StateLock
from tests.gateway.cli_process import problem_lines, write_config


def a_log_without_its_database(state):
    (state / "switchboard.db").write_bytes(b"")
    (state / "switchboard.db-wal").write_bytes(b"\x37\x7f\x06\x82" + b"\0" * 60)


def a_file_that_is_no_database(state):
    (state / "switchboard.db").write_bytes(b"not sqlite " * 512)


@pytest.mark.parametrize("files", [a_log_without_its_database, a_file_that_is_no_database])
def test_a_second_start_names_the_gateway_that_holds_the_directory_not_its_database(tmp_path, capsys, files):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    files(state)  # what the check would make of the files of the gateway that holds the directory
    config = write_config(tmp_path / "switchboard.yaml", {"state_dir": str(state), "server": {"port": 0}})
    running = StateLock.acquire(state)  # another open file: refused to the command as to another process
    try:
        status = cli.main(["--config", str(config), "run"])
    finally:
        running.release()
    err = capsys.readouterr().err
    assert status == 1, err
    assert problem_lines(err) == [
        f"switchboard: state directory {state} is in use by pid {os.getpid()}: stop that gateway first, or give"
        " this one its own state_dir (or $SWITCHBOARD_STATE_DIR)"], err


def test_a_free_directory_still_has_its_database_checked_before_the_start(tmp_path, capsys):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    a_file_that_is_no_database(state)
    config = write_config(tmp_path / "switchboard.yaml", {"state_dir": str(state), "server": {"port": 0}})
    assert cli.main(["--config", str(config), "ask", "hi"]) == 1
    (line,) = problem_lines(capsys.readouterr().err)
    assert line.startswith(f"switchboard: state database {state / 'switchboard.db'} is not a SQLite database"), line
    with pytest.raises(sqlite3.DatabaseError):  # left as it was, for the operator to look at
        sqlite3.connect(state / "switchboard.db").execute("SELECT 1 FROM sqlite_master").fetchone()
