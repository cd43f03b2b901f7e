"""`switchboard inbox dead` only reads: it never upgrades an older version's database (a newer switchboard
installed beside an older gateway still running did so under it) and lists a backup's read-only copy;
`inbox retry` upgrades one only when no gateway runs on it; an id that is no number says what an id is."""

from __future__ import annotations

import contextlib
import sqlite3

import pytest

from gateway.cli import EXIT_CONFIG, main
from gateway.host import STATE_DB
from gateway.store import SCHEMA_VERSION
from tests.gateway.cli_process import on_private_tmpfs, problem_lines, run
from tests.gateway.test_inbox_cli import a_dead_letter, another_process_holding


def schema_of(db) -> str:
    with contextlib.closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as conn:
        return conn.execute("SELECT value FROM gateway_meta WHERE key='schema_version'").fetchone()[0]


def as_an_older_version_left_it(db, version: int = SCHEMA_VERSION - 1, *statements: str) -> None:
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE gateway_meta SET value=? WHERE key='schema_version'", (str(version),))
        for statement in statements:
            conn.execute(statement)
    # The last connection closed: checkpointed into the file, no -wal left.
    assert not (db.parent / f"{STATE_DB}-wal").exists()


@pytest.fixture
def state(tmp_path):
    a_dead_letter(tmp_path / "state")
    return tmp_path / "state"


@pytest.fixture
def config_file(tmp_path, state):
    path = tmp_path / "switchboard.yaml"
    path.write_text(f"state_dir: {state}\n")
    return path


def test_listing_an_older_versions_database_leaves_it_as_it_was(state, config_file, capsys):
    db = state / STATE_DB
    as_an_older_version_left_it(db)
    before = db.read_bytes()
    assert main(["--config", str(config_file), "inbox", "dead"]) == 0
    assert "chat chat c1  event ev-1" in capsys.readouterr().out  # its letters are where this version keeps them
    assert schema_of(db) == str(SCHEMA_VERSION - 1)  # it was upgraded, under the older gateway still running
    assert db.read_bytes() == before


def test_an_older_database_whose_letters_this_version_cannot_read_is_named_not_upgraded(state, config_file,
                                                                                        capsys):
    db = state / STATE_DB
    as_an_older_version_left_it(db, 2, "DROP TABLE gateway_dead_letters")  # schema 2 kept no dead letters
    before = db.read_bytes()
    assert main(["--config", str(config_file), "inbox", "dead"]) == EXIT_CONFIG
    assert capsys.readouterr().err == (
        f"switchboard: state database {db} is from an older version (gateway schema 2; this one reads"
        f" {SCHEMA_VERSION}): start the gateway once to upgrade it, or use the matching switchboard\n")
    assert db.read_bytes() == before and schema_of(db) == "2"


def test_a_read_only_copy_is_listed(tmp_path, state):
    """A backup's copy on a read-only mount: SQLite cannot make the -shm a database in WAL mode reads
    through, and the listing asked for a database it could write."""
    backup = tmp_path / "backup"
    config_file = tmp_path / "backup.yaml"
    config_file.write_text(f"state_dir: {backup}\n")
    then = f'cp "{state / STATE_DB}" "$0/" && mount -o remount,ro "$0"'
    prefix = on_private_tmpfs(backup, "size=1m", then=then) or pytest.skip("needs user and mount namespaces")
    result = run(tmp_path, "inbox", "dead", "--config", str(config_file), prefix=prefix)
    assert result.returncode == 0, result.stderr
    assert "chat chat c1  event ev-1" in result.stdout and not problem_lines(result.stderr), result.stderr


@pytest.mark.parametrize(("command", "done"), [("retry", "re-queued chat event ev-1"),
                                               ("dismiss", "dismissed chat event ev-1: it will not be handled")])
def test_retry_or_dismiss_upgrades_no_database_a_gateway_runs_on(state, config_file, capsys, command, done):
    db = state / STATE_DB
    as_an_older_version_left_it(db)
    before = db.read_bytes()
    with another_process_holding(state):  # the older gateway, still running
        assert main(["--config", str(config_file), "inbox", command, "1"]) == EXIT_CONFIG
    assert capsys.readouterr().err == (
        f"switchboard: state database {db} is from an older version (gateway schema {SCHEMA_VERSION - 1}; this"
        f" one reads {SCHEMA_VERSION}), and a gateway runs on it: stop it and start this version's gateway once to"
        " upgrade the database, or use the switchboard that matches the running one\n")
    assert db.read_bytes() == before
    # With no gateway on it, either upgrades it as a start would, and hands the letter back or forgets it.
    assert main(["--config", str(config_file), "inbox", command, "1"]) == 0
    assert done in capsys.readouterr().out
    assert schema_of(db) == str(SCHEMA_VERSION)


@pytest.mark.parametrize("typed", ["abc", "1.5", "", str(2**64)])
def test_an_id_that_is_no_letters_says_what_an_id_is(config_file, capsys, typed):
    with pytest.raises(SystemExit) as usage:
        main(["--config", str(config_file), "inbox", "retry", typed])
    assert usage.value.code == 2
    err = capsys.readouterr().err
    assert f"argument ID: {typed!r} is not a dead letter id: ids are the numbers `switchboard inbox dead` lists" \
           in err, err
    assert "row_id" not in err

