"""A start over a journal whose handle key table holds a corrupt row stops, in one line naming that table and
the key, the secret never in it; nor does it make a fresh key that would leave every journaled handle unknown."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agent import HookRegistry
from gateway.config import config_from_mapping
from gateway.startup_errors import explain
from lifecycle import AsyncSubagentLifecycle, ChildHost
from lifecycle._contract import SubagentLifecycleError
from lifecycle._sqlite_journal import SqliteJournal
from tests.lifecycle.conftest import FakeClock, make_registry


def _service(path: Path) -> AsyncSubagentLifecycle:
    return AsyncSubagentLifecycle(ChildHost(tools=make_registry(), hooks=HookRegistry(), clock=FakeClock()),
                                  SqliteJournal(path))


async def test_a_corrupt_key_row_stops_the_start_naming_the_table_and_the_key(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    first = _service(path)
    await first.start()
    kid, secret = first.keyring.active_kid, first.keyring.export()[0].secret
    await first.close()
    with sqlite3.connect(path) as db:  # what a bad restore or a hand edit can leave: REAL affinity keeps text as text
        db.execute("UPDATE lifecycle_keys SET created_at = 'yesterday' WHERE kid = ?", (kid,))
    db.close()

    second = _service(path)
    with pytest.raises(ValueError) as refused:
        await second.start()
    line = explain(refused.value, config_from_mapping({}).config)
    assert f"lifecycle_keys): key {kid!r} has a created_at that is not a finite number" in line
    assert secret.hex() not in line and repr(secret) not in line
    with pytest.raises(SubagentLifecycleError):  # closed for good, as any failed start leaves it
        await second.start()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT kid FROM lifecycle_keys").fetchall() == [(kid,)]  # no fresh key was made
    db.close()
