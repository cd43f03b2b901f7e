"""SQLite's own errors, raised for real, for tests of what the adapters do when the store refuses."""

from __future__ import annotations

import sqlite3


def full_disk() -> sqlite3.OperationalError:
    """SQLite's own refusal of a write for want of room (SQLITE_FULL), as the gateway's store raises it."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE inbox (text)")
    db.execute("PRAGMA max_page_count=2")
    try:
        db.execute("INSERT INTO inbox VALUES (?)", ("x" * 50_000,))
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        db.close()
    raise AssertionError("the write fitted")
