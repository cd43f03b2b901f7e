"""Another process holding the state database's write lock, as ``/healthz`` and ``/metrics`` show it.

An ``sqlite3`` shell left after ``BEGIN IMMEDIATE``, or a database browser with a change not saved, holds
it: `lifecycle.SqliteDatabase` finds so once a wait for the lock was in vain, logs it once, and refuses every
write at once until it ends (`SqliteDatabase.write_lock_held_since`). Nothing is recorded meanwhile, so no
message is acknowledged or answered: ``/healthz`` answers 503, as for a file that cannot be written, and
``switchboard_state_db_write_lock_held`` is 1 (`gateway.metrics`). ``/healthz`` names each database held by
what it holds and its file's name, never its path.
"""

from __future__ import annotations

from collections.abc import Mapping

from lifecycle import SqliteDatabase

OK: dict[str, object] = {"status": "ok", "reason": None, "since": None}


def _held(databases: Mapping[str, SqliteDatabase]) -> dict[SqliteDatabase, tuple[list[str], float]]:
    """Each of ``databases`` (by what it holds: ``the gateway store``) whose write lock another process holds,
    with all it holds (a store and a journal may share one) and since when (epoch seconds)."""
    found: dict[SqliteDatabase, tuple[list[str], float]] = {}
    for what, db in databases.items():
        if db in found:
            found[db][0].append(what)
        elif (since := db.write_lock_held_since) is not None:
            found[db] = ([what], since)
    return found


def health(databases: Mapping[str, SqliteDatabase]) -> dict[str, object]:
    """As ``/healthz`` shows it: ``ok``, or ``held`` naming each database held, and since when the first was."""
    found = _held(databases)
    if not found:
        return dict(OK)
    names = "; ".join(f"{db.path.name} ({' and '.join(what)})" for db, (what, _) in found.items())
    return {"status": "held",
            "reason": f"state database write lock held by another process: {names}; nothing is recorded and no"
                      " message answered until that transaction (in an sqlite3 shell or a database browser) is"
                      " committed or rolled back, or the program closed",
            "since": min(since for _, since in found.values())}
