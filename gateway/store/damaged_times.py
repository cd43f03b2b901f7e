"""Times the store cannot read as times, mended as the store opens.

SQLite keeps whatever it is given in a REAL column: a hand edit or a damaged page can leave a text
there. The code reading the row subtracts it from the clock and raises a TypeError: a credential
hold's stopped every start, and an outbox part's held up its chat's every later reply for good.
Each such value is logged (row ids only, never the text: it may hold anything) and mended:

- an outbox part still pending whose journaling time is lost is marked ``failed`` with why, where
  the operator sees it (the console, ``switchboard_outbox_messages``) and may re-queue it: what it
  owes the user is neither sent at an unknown time nor dropped;
- a credential hold's period is forgotten: it only excused its parts' failures;
- any other lost time becomes now, and a lost optional one (a retry time, when it was sent) none.
"""

from __future__ import annotations

import logging

from lifecycle import SqliteDatabase

log = logging.getLogger("gateway.store")

_DAMAGED = "typeof({0}) NOT IN ('real', 'integer', 'null')"
LOST_TIME = "the row's journaling time is damaged (not a number); re-queue it to send it"


def mend(db: SqliteDatabase, now: float) -> None:
    """Mend every gateway table's damaged REAL values (see the module doc); inside the caller's transaction."""
    tables = [r[0] for r in db.read("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'gateway\\_%'"
                                    " ESCAPE '\\'")]
    for table in tables:
        times = [(r[1], bool(r[3])) for r in db.read(f"PRAGMA table_info({table})") if r[2].upper() == "REAL"]
        # One scan of the table at every start, to find nothing nearly always; a column's own only then.
        if not times or db.read_one(f"SELECT 1 FROM {table} WHERE "
                                    + " OR ".join(_DAMAGED.format(c) for c, _ in times) + " LIMIT 1") is None:
            continue
        for column, required in times:
            damaged = _DAMAGED.format(column)
            ids = [r[0] for r in db.read(f"SELECT rowid FROM {table} WHERE {damaged}")]
            if not ids:
                continue
            log.warning("state database: %s.%s held %d value(s) that are not times (rowids %s); %s", table, column,
                        len(ids), ", ".join(map(str, ids[:20])), _mend(db, table, column, required, now))


def _mend(db: SqliteDatabase, table: str, column: str, required: bool, now: float) -> str:
    damaged = _DAMAGED.format(column)
    if table == "gateway_credential_holds":
        db.write(f"DELETE FROM {table} WHERE {damaged}")
        return "those credential holds are forgotten"
    if table == "gateway_outbox" and column == "created_at":
        db.write(f"UPDATE {table} SET status='failed', last_error=?, next_attempt_at=NULL WHERE {damaged}"
                 " AND status='pending'", (LOST_TIME,))
    db.write(f"UPDATE {table} SET {column}=? WHERE {damaged}", (now if required else None,))
    if table == "gateway_outbox" and column == "created_at":
        return "pending ones are marked failed, for the operator to re-queue"
    return "set to now" if required else "cleared"
