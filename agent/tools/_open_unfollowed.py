"""Opening a path that was checked, without following a symlink or blocking on the way.

The file tools, `send_file` and a subagent's images check a path (`resolve_in_workspace`: inside
the workspace once symlinks are resolved; the session's `FileScope`), then use it. Used by path,
a file swapped in between for a symlink to ``/etc/…`` (or a folder on the way for a symlink to
elsewhere) would be read or written all the same, and a FIFO would block its reader (or writer)
for ever. So the path is opened one folder at a time from the root, following no symlink (it was
resolved, so one there now was put there since), the file without blocking, and the caller
checks what it opened on the descriptor (`os.fstat`), never by path again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

# O_PATH opens a folder without needing leave to list it (a home folder of mode 0711 above the workspace).
_FOLDER = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_ANY = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC

READ = os.O_RDONLY
"""Flags to read the file."""


def open_unfollowed(path: Path, flags: int = READ, *, make_folders: bool = False) -> int:
    """The descriptor of ``path`` (absolute) opened with ``flags``, following no symlink anywhere on
    it and without blocking (``O_NONBLOCK``: a FIFO opens at once, or fails with ENXIO when written
    to with no reader). ``make_folders`` makes the missing folders on the way (mode 0o777 less the
    umask), each inside the one opened before it.

    Raises OSError: ELOOP for a symlink as the file (or folder) or a folder on the way (`is_swapped`),
    NotADirectoryError for a file as a folder, FileNotFoundError, or whatever ``open`` raises. The
    caller closes the descriptor. Blocking.
    """
    folder = open_folder(path, make_folders=make_folders)
    try:
        return _open(folder, path.name, flags | _ANY)
    finally:
        os.close(folder)


def open_folder(path: Path, *, make_folders: bool = False) -> int:
    """The descriptor (``O_PATH``) of the folder ``path`` (absolute) is in, opened as `open_unfollowed`
    opens it, for calls on the file's name relative to it (``dir_fd=``). Raises as `open_unfollowed`;
    the caller closes the descriptor. Blocking."""
    return open_directory(path.parent, make_folders=make_folders)


def open_directory(path: Path, *, make_folders: bool = False, mode: int = 0o777) -> int:
    """The descriptor (``O_PATH``) of the folder ``path`` (absolute, no ``..`` in it) itself, each folder
    on the way opened inside the one before, following no symlink, for writes by name relative to it
    (``dir_fd=``): checked by path and then written by path, a folder swapped for a symlink in between
    was followed, and the file landed wherever the link led. ``make_folders`` makes the missing folders
    on the way, and ``path``, with ``mode`` (less the umask); folders already there keep theirs. Raises
    as `open_unfollowed`; the caller closes the descriptor. Blocking."""
    folder = os.open(path.anchor, _FOLDER)
    try:
        for part in path.parts[1:]:
            inner = _folder(folder, part, make_folders, mode)
            os.close(folder)
            folder = inner
    except BaseException:
        os.close(folder)
        raise
    return folder


def _folder(parent: int, name: str, make: bool, mode: int) -> int:
    try:
        return _open(parent, name, _FOLDER)
    except FileNotFoundError:
        if not make:
            raise
    try:
        os.mkdir(name, mode, dir_fd=parent)
    except FileExistsError:  # made meanwhile; opened, unfollowed, like any other
        pass
    _flush(parent)
    return _open(parent, name, _FOLDER)


def _flush(folder: int) -> None:
    """Flush a folder ``name`` was just made in, so that the new name lasts: a caller flushes the file it
    writes and the folder that holds it, and a power cut could still take a folder made for it, with the file
    reported written. Flushed when another process made it meanwhile too (it may not have flushed it yet). A file
    system that flushes no folders is the caller's to report, at its own folder's flush."""
    with contextlib.suppress(OSError):
        fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=folder)  # O_PATH cannot be flushed
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _open(parent: int, name: str, flags: int) -> int:
    try:
        return os.open(name, flags, 0o666, dir_fd=parent)
    except NotADirectoryError:  # what O_NOFOLLOW with O_DIRECTORY (a folder) says of a symlink
        if stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
            raise OSError(errno.ELOOP, "a symlink where a folder was") from None
        raise


def is_swapped(exc: OSError) -> bool:
    """Whether `open_unfollowed` met a symlink on the path, which it was checked without (symlinks
    resolved): the path changed after it was checked."""
    return exc.errno == errno.ELOOP
