"""Where the terminal chat puts a file the agent sends: a copy in the chat's ``files_dir``, never over
one already there (a name taken gets ``-2``, ``-3``...). Apart from `platforms.local`, which prints the
copy's path: the copying is disk work, run off the loop, with nothing of the screen in it.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

UPLOAD_LIMIT = 1024**3
"""The terminal copies on one disk; 1 GB keeps a runaway file from filling it."""


def keep(source: Path, wanted: Path) -> Path:
    """Copy ``source`` to ``wanted``, or beside it as ``<stem>-2<suffix>``... when that is taken. A copy that
    fails midway (a disk full, a read error) is removed before the error goes on: left, it took the name, and the
    outbox's next try printed ``report-2.csv`` beside a ``report.csv`` empty or cut short."""
    wanted.parent.mkdir(parents=True, exist_ok=True)
    for n in itertools.count(1):
        target = wanted if n == 1 else wanted.with_name(f"{wanted.stem}-{n}{wanted.suffix}")
        with source.open("rb") as src:
            try:
                dst = target.open("xb")
            except FileExistsError:
                continue
            try:
                with dst:
                    shutil.copyfileobj(src, dst)
            except BaseException:
                target.unlink(missing_ok=True)
                raise
        return target.resolve()
    raise AssertionError("unreachable")
