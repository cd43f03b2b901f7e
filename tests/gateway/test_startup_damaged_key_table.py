"""A damaged lifecycle key table stops every start alike until the operator restores it: exit status 78, which
the systemd unit does not start again, and one line naming the file and what to do."""

from __future__ import annotations

import sqlite3

from gateway.cli import EXIT_CONFIG
from gateway.startup_errors import _KEY_TABLE, explain, lasting
from gateway.testing import make_config
from lifecycle._capability import _TABLE
from tests.gateway.cli_process import Running, run
from tests.gateway.test_startup import config, only_line  # noqa: F401 (a fixture)


def test_a_malformed_key_row_is_lasting_and_named_with_its_file(tmp_path, config):  # noqa: F811
    db = tmp_path / "state" / "switchboard.db"
    with Running(tmp_path, "--config", str(config)) as gateway:
        gateway.started()  # the first start made the table's first key
    conn = sqlite3.connect(db)
    assert conn.execute("UPDATE lifecycle_keys SET secret = x'00'").rowcount == 1
    conn.commit()
    conn.close()
    before = db.read_bytes()
    line = only_line(run(tmp_path, "run", "--config", str(config)), EXIT_CONFIG)
    assert line.startswith(f"switchboard: {db}: {_TABLE}: key "), line
    assert line.endswith("has no usable secret; restore the table from the same backup as the journal's records")
    assert db.read_bytes() == before


def test_an_emptied_key_table_beside_records_is_lasting(tmp_path):
    # As lifecycle._service raises it; its own words already say to restore the table.
    error = ValueError(f"{_TABLE} is empty, but the journal holds children whose handles were signed with its keys:"
                       " restore the table from the same backup as the journal's records, then start again")
    assert lasting(ValueError("a table named otherwise")) is False
    try:
        try:
            raise error
        except ValueError as exc:
            raise RuntimeError("the lifecycle did not start") from exc
    except RuntimeError as wrapped:
        assert lasting(wrapped) is True
        line = explain(wrapped, make_config(tmp_path))
    assert line == f"{tmp_path / 'state' / 'switchboard.db'}: {error}"


def test_the_table_is_named_as_the_lifecycle_names_it():
    assert _KEY_TABLE == _TABLE
