"""A path changed between its check and its open, deterministically: `swap_at_next_open` runs a
change just before the next file this thread opens, folder it lists or folder it makes (an
``open``, ``os.scandir`` or ``os.mkdir`` audit event: Python's ``open`` and ``os.open`` both raise
the first), so whatever the code checks by path before that sees the path as it
was, and what it opens sees the change. Plus the changes a hostile neighbour in the workspace
could make, and `unblock`, which ends a read or write stuck on a FIFO so a failing test cannot hang.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path

_armed: dict[int, Callable[[], None]] = {}


def _on_audit(event: str, args: tuple) -> None:
    if event in ("open", "os.mkdir", "os.scandir") and _armed:
        change = _armed.pop(threading.get_ident(), None)
        if change is not None:
            change()


sys.addaudithook(_on_audit)  # hooks cannot be removed: this one does nothing unless armed


def swap_at_next_open(change: Callable[[], None]) -> None:
    """Run ``change`` once, as this thread next opens a file, lists a folder or makes one (before it does)."""
    _armed[threading.get_ident()] = change


def disarm() -> None:
    _armed.clear()


def symlink_to(target: Path, outside: Path) -> None:
    """``target`` (a file) becomes a symlink to ``outside``."""
    target.unlink()
    target.symlink_to(outside)


def folder_symlink_to(target: Path, outside_folder: Path) -> None:
    """The folder holding ``target`` becomes a symlink to ``outside_folder``, which holds a file of the
    same name: the last part of the path is no symlink, a folder on the way is."""
    shutil.rmtree(target.parent)
    target.parent.symlink_to(outside_folder)


def fifo(target: Path) -> None:
    """``target`` becomes a FIFO: opened by path, a read (or write) waits for the other end for ever."""
    if target.exists():
        target.unlink()
    os.mkfifo(target)


def unblock(path: Path) -> None:
    """If ``path`` is a FIFO, wake whatever waits opening it (its both ends opened at once, which
    never blocks), then take it away: a reader gets to its end, a writer a broken pipe, and a
    second open by path finds nothing to wait on."""
    try:
        end = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        if stat.S_ISFIFO(os.fstat(end).st_mode):
            path.unlink()
    finally:
        os.close(end)
