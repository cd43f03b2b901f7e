"""Writing a file whole or not at all, so that it survives a crash or a power cut once written.

A file is written under a temporary name in its folder, flushed to disk, renamed over the old one,
and then the folder is flushed. Both flushes matter: without the first, the rename can reach the
disk before the bytes do, and a power cut leaves an empty or partial file under the real name;
without the second, the rename itself can be lost, and the old file (or none) comes back after
the caller reported the new one written. The memory tool, the gateway's stored attachments and
its copies of files to send write this way (`flush_folder` for a folder of their own). (`platforms/`
imports nothing of `agent/`: the web chat's kept files flush their own.) A process killed between
the write and the rename leaves the temporary file: `remove_leftovers` is how a writer that may
meet a write under way (another turn's, another process's) sweeps its own.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import stat
import time
from pathlib import Path

log = logging.getLogger("agent.durable")

LEFTOVER_SECONDS = 600
"""Seconds unchanged after which a temporary file is a crash's leftover, not a write under way (a
write takes milliseconds: its content is in hand)."""


def write_whole(target: Path | str, data: bytes, *, temporary: Path | str, mode: int = 0o666,
                folder: int | None = None) -> None:
    """Write ``data`` as ``target``, replacing it, through ``temporary`` (a new name in the same
    folder, made with ``mode`` before the umask; FileExistsError, untouched, when it exists):
    once this returns, ``target`` holds ``data`` whatever happens to the machine (unless its folder
    could not be flushed: logged); raising, it holds what it held. The ``temporary`` this made is
    gone either way. With ``folder`` (a descriptor of the folder, ``O_PATH`` will do: see
    `agent.tools._open_unfollowed.open_directory`), ``target`` and ``temporary`` are names in it: a
    folder on the way swapped for a symlink since the caller checked it is not followed. Blocking."""
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                 dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, target, src_dir_fd=folder, dst_dir_fd=folder)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=folder)
    try:
        if folder is None:
            fsync_path(Path(target).parent)
        else:
            _fsync_at(folder)
    except OSError as exc:
        # Raised, it would say nothing was written of a file in place now: a memory note the model
        # was told is not there, and adds again. Some file systems flush no folders (EINVAL).
        # Not the file's name (at DEBUG): an attachment's is what its user called it, and the log is the operator's.
        log.warning("a file%s is written, but its folder could not be flushed to disk (%s): a power cut may bring"
                    " back what it held before", f" in {Path(target).parent}" if folder is None else "",
                    exc.strerror or exc)
        log.debug("the file whose folder could not be flushed: %s", target)


def _fsync_at(folder: int) -> None:
    """Flush the folder a descriptor is open on (``O_PATH`` cannot be flushed itself)."""
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=folder)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_leftovers(folder: int | Path, temporary: re.Pattern[str]) -> int:
    """Remove from ``folder`` (or the folder a descriptor is open on, ``O_PATH`` will do) the
    temporary files of writes a crash cut short before their rename (any other failure removes its
    own): only regular files whose whole name ``temporary`` matches, unchanged for
    `LEFTOVER_SECONDS`. Returns how many it removed. Best effort: what cannot be listed or removed
    stays, for the next call. Blocking."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    try:
        listing = os.open(".", flags, dir_fd=folder) if isinstance(folder, int) else os.open(folder, flags)
    except OSError:
        return 0
    removed = 0
    try:
        names = [name for name in os.listdir(listing) if temporary.fullmatch(name)]
        stale_before = time.time() - LEFTOVER_SECONDS
        for name in names:
            try:
                info = os.stat(name, dir_fd=listing, follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and info.st_mtime < stale_before:
                    os.unlink(name, dir_fd=listing)
                    removed += 1
            except OSError:
                continue
    except OSError:
        pass
    finally:
        os.close(listing)
    return removed


def fsync_path(path: Path) -> None:
    """Flush ``path`` (a file, or a folder: the names in it) to disk. Blocking."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def flush_folder(path: Path) -> None:
    """Flush the folder ``path`` (the names in it) to disk, as `fsync_path` does, where its file
    system can: one that flushes no folders (EINVAL: some network and FUSE mounts) is warned of
    and left to keep the names as it does, since refusing every write there would keep
    nothing at all. Other errors raise. Blocking."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        log.warning("the folder %s could not be flushed to disk (%s): its file system flushes no folders,"
                    " and a power cut may lose what was just written in it", path, exc.strerror or exc)
    finally:
        os.close(fd)
