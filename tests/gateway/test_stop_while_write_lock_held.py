"""A stop while another process holds the state database's write lock (an ``sqlite3`` shell left after BEGIN
IMMEDIATE) or the disk is full: the clean stop cannot be recorded, and the stop says so and goes on closing the
lifecycle host and the store. Raised, it left both open and ended the process with a traceback."""

from __future__ import annotations

import logging
import sqlite3

from gateway.testing import RecordingAdapter, make_config

BUSY_TIMEOUT = 0.3


async def test_a_stop_the_store_cannot_record_closes_the_host_and_the_store_all_the_same(tmp_path, gateways, caplog):
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    db = gateway.store.db
    db.busy_timeout = BUSY_TIMEOUT  # the store's 5 s, shortened
    db.read(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
    other = sqlite3.connect(db.path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        await gateway.stop()
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert db.closed
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any(e.startswith("the clean stop could not be recorded (OperationalError: database is locked)")
               for e in errors), errors
