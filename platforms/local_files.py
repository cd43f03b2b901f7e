"""Where the terminal chat puts a file the agent sends: a copy in the chat's ``files_dir``, never over
one already there (a name taken gets ``-2``, ``-3``...). Apart from `platforms.local`, which prints the
copy's path: the copying is disk work, run off the loop, with nothing of the screen in it. A copy is 0600
and a folder it makes 0700 (`FILE_MODE`), whatever the umask.
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

UPLOAD_LIMIT = 1024**3
"""The terminal copies on one disk; 1 GB keeps a runaway file from filling it."""
FILE_MODE, FOLDER_MODE = 0o600, 0o700
"""What the agent sends the terminal chat is its user's, as what it sends any chat is (the outbox's copies,
the web chat's downloads): by the umask alone (0022 under systemd and Docker) a copy was 0644, for every
user of the machine to read."""
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def keep(source: Path, wanted: Path) -> Path:
    """Copy ``source`` to ``wanted``, or beside it as ``<stem>-2<suffix>``... when that is taken. A copy that
    fails midway (a disk full, a read error) is removed before the error goes on: left, it took the name, and the
    outbox's next try printed ``report-2.csv`` beside a ``report.csv`` empty or cut short."""
    wanted.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    for n in itertools.count(1):
        target = wanted if n == 1 else wanted.with_name(f"{wanted.stem}-{n}{wanted.suffix}")
        with source.open("rb") as src:
            try:
                dst = os.fdopen(os.open(target, _CREATE, FILE_MODE), "wb")  # never over a file there
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
