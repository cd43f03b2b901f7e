"""Rows that no longer read back, left out of the reads of many rows.

A hand edit or a damaged write can leave a text column holding no UTF-8, or a JSON column holding no JSON
(SQLite keeps anything in any column). Read as text, SQLite's own decode error fails the whole read, and quotes
the row's text: one such row stopped every start (the inbox's unfinished events, the outbox's pending parts, the
running delegations) or the console's lists, for every chat. Such columns are read as bytes (`BYTES`) and decoded
here; a row that still does not read back is left out by its reader, with one ERROR per row and process naming
its table and key, never what it holds. The row itself is kept as it is, for the operator to mend or delete.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable

log = logging.getLogger("gateway.store")

BYTES = "CASE WHEN typeof({0}) = 'text' THEN CAST({0} AS BLOB) ELSE {0} END"
"""A column read as SQL: its text as bytes (`text` decodes them), anything else as it is."""
UNREADABLE = (ValueError, TypeError, KeyError, AttributeError, RecursionError)
"""What reading a damaged row's bytes or JSON raises (UnicodeDecodeError and JSONDecodeError are ValueErrors;
JSON of the wrong shape fails as the others)."""


def as_bytes(*columns: str) -> str:
    """The select list of ``columns``, each read as `BYTES`."""
    return ", ".join(BYTES.format(column) for column in columns)


def text(value: object) -> object:
    """A column read as `BYTES`: its bytes decoded (as `SqliteDatabase.text` bound them: a lone surrogate kept),
    anything else as it is. UnicodeDecodeError for bytes that hold no UTF-8."""
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def row_name(column: str, value: object, rowid: int) -> str:
    """A row for an ERROR: by its key ``column`` holding ``value`` (read as `BYTES`), or by its rowid when the
    key itself is no UTF-8 (then it is what was damaged, and may hold anything)."""
    try:
        return f"{column} {text(value)}"
    except UnicodeDecodeError:
        return f"rowid {rowid}"


class LeftOut:
    """The rows of one table left out so far: each is logged the first time a read leaves it out (the console
    reads its lists ten times a second), and again only by the next process."""

    def __init__(self, table: str) -> None:
        self._table = table
        self._told: set[Hashable] = set()

    def report(self, rows: dict[Hashable, str]) -> None:
        """Log the rows (key: why, an exception's type, never its text) not logged before."""
        new = {key: why for key, why in rows.items() if key not in self._told}
        if not new:
            return
        self._told.update(new)
        log.error("state database: %d row(s) of %s could not be read back (a hand edit, a damaged write) and are"
                  " left out, kept as they are: %s", len(new), self._table,
                  ", ".join(f"{key} ({why})" for key, why in list(new.items())[:20]))
