"""Run by test_database: a write SQLite takes, then a commit the full disk refuses (on a tmpfs the
test mounted for this process alone), then room again. Prints what another connection reads."""

import asyncio
import os
import sqlite3
import sys
from pathlib import Path

from lifecycle import SqliteDatabase


async def main(directory: Path) -> None:
    db = SqliteDatabase(directory / "s.db")
    db.write("CREATE TABLE t (k, v)")
    await db.durable()
    filler = os.open(directory / "fill", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(filler, b"x" * 4096)
    except OSError:  # the disk is full
        os.close(filler)
    db.write("INSERT INTO t VALUES ('answer', ?)", ("y" * 20_000,))  # taken: it is in the page cache
    try:
        await db.durable()
    except sqlite3.OperationalError as exc:
        print(f"refused: {exc}")
    (directory / "fill").unlink()  # room again
    await db.durable()
    print(sqlite3.connect(directory / "s.db").execute("SELECT k FROM t").fetchall())
    db.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
