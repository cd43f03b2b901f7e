"""One process per state directory: an exclusive lock on ``<state_dir>/switchboard.lock``.

Two gateways on one state directory would both replay the inbox and both send the
outbox's pending messages, so users would get every reply twice. The lock is
``flock(LOCK_EX | LOCK_NB)`` on a file in the directory: the kernel drops it when
the holder exits, however it exits (a crash or ``kill -9`` leaves no stale lock),
and it works wherever the database does. The file holds the holder's pid, to name
it in the error the second process prints. The file itself is never deleted:
deleting it while another process opens it would let two processes lock two files.
An operator may delete it all the same (a habit with lock files): a directory only its
owner may read (as the gateway creates it, 0700) is locked too, which no one deletes while it
holds the database, so a second process is refused then as well.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from pathlib import Path

from gateway.errors import StartupError

LOCK_FILE = "switchboard.lock"

_held: dict[Path, StateLock] = {}


class StateLock:
    """An acquired lock on a state directory; `release` gives it up (idempotent)."""

    def __init__(self, state_dir: Path, fd: int, dir_fd: int | None = None) -> None:
        self.state_dir = state_dir
        self._fd: int | None = fd
        self._dir_fd = dir_fd

    @classmethod
    def acquire(cls, state_dir: Path) -> StateLock:
        """Take the lock, or raise `StartupError`: ``state directory … is in use by pid N``
        when another process holds it, or a line naming the lock file when it cannot be
        written (read-only directory, full disk). The directory must exist."""
        state_dir = Path(state_dir).absolute()
        path = state_dir / LOCK_FILE
        try:
            # O_CLOEXEC: a child (execute_code) must not inherit the lock and outlive us holding it.
            # 0600: another user who could open the file could take the lock and keep us from starting.
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StartupError(_unwritable(state_dir, path, exc)) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_holder(fd)
            os.close(fd)
            if exc.errno in _NO_LOCKS:
                raise StartupError(_unlockable(state_dir, exc)) from exc
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StartupError(_unwritable(state_dir, path, exc)) from exc
            raise StartupError(_in_use(state_dir, *holder)) from None
        dir_fd = _lock_directory(state_dir)
        if dir_fd == _TAKEN:  # by a process whose lock file was deleted: it runs on, unnamed
            os.close(fd)
            raise StartupError(_in_use(state_dir, None, None))
        try:
            os.ftruncate(fd, 0)
            # The host too: a gateway in another container or on another host sharing the volume has a pid that
            # means nothing here, and "in use by pid 1" sent its operator looking on this one.
            os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
        except OSError as exc:
            os.close(fd)
            if dir_fd is not None:
                os.close(dir_fd)
            raise StartupError(_unwritable(state_dir, path, exc)) from exc
        return cls(state_dir, fd, dir_fd)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        dir_fd, self._dir_fd = self._dir_fd, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor drops the flock
        if dir_fd is not None:
            os.close(dir_fd)
        if _held.get(self.state_dir) is self:
            del _held[self.state_dir]

    @property
    def held(self) -> bool:
        return self._fd is not None


def hold(state_dir: Path) -> StateLock:
    """Acquire the lock for the rest of this process's life; again for the same directory
    returns the lock already held (a second flock from this process would refuse us)."""
    key = Path(state_dir).absolute()
    lock = _held.get(key)
    if lock is None or not lock.held:
        lock = _held[key] = StateLock.acquire(key)
    return lock


def held_here(state_dir: Path) -> bool:
    """Whether this process holds the lock of ``state_dir`` (so no other process uses it)."""
    lock = _held.get(Path(state_dir).absolute())
    return lock is not None and lock.held


_TAKEN = -1
"""`_lock_directory`'s answer when another process holds the directory's lock."""


def _lock_directory(state_dir: Path) -> int | None:
    """A descriptor of ``state_dir`` holding its flock, `_TAKEN`, or None where the lock file alone
    has to do: a directory other users may read (they could take its lock and keep us from starting,
    as they cannot the 0600 file's), or a file system that does not lock directories."""
    try:
        fd = os.open(state_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_mode & 0o044:
            os.close(fd)
            return None
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        return _TAKEN if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else None
    return fd


def _in_use(state_dir: Path, pid: int | None, host: str | None) -> str:
    who = f"pid {pid}" if pid else "another process"
    if pid and host and host != socket.gethostname():
        who += f" on host {host}"
    return (f"state directory {state_dir} is in use by {who}: stop that gateway first, or give this one"
            " its own state_dir (or $SWITCHBOARD_STATE_DIR)")


def _read_holder(fd: int) -> tuple[int | None, str | None]:
    try:
        return holder_of(os.pread(fd, 300, 0).decode("ascii", "replace"))
    except OSError:
        return None, None


def holder_of(text: str) -> tuple[int | None, str | None]:
    """The pid and host name a lock file's ``text`` names (``4711 web-2``; an older gateway's names its pid alone),
    each None where it names none."""
    pid, _, host = text.strip().partition(" ")
    return (int(pid) if pid.isdigit() else None), (host.strip() or None)


_NO_LOCKS = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS)
"""What ``flock`` answers on a file system that keeps no locks: NFS without its lock service
(``nolock``, or ``rpc.statd`` not running), some FUSE and SMB mounts."""


def _unlockable(state_dir: Path, exc: OSError) -> str:
    """The line for a state directory whose file system refuses locks. Not blamed on write access, which
    it has: the fix is another disk. Nor started without the lock: a second gateway would not be kept out."""
    return (f"state directory {state_dir} cannot be locked ({exc.strerror}): its file system keeps no locks"
            " (a network file system?); point state_dir (or $SWITCHBOARD_STATE_DIR) at a local disk, which"
            " SQLite's write-ahead log needs as well")


def read_only(state_dir: Path) -> str:
    """The line for a state directory on a read-only file system."""
    return (f"state directory {state_dir} is on a read-only file system; make it writable, or point"
            " state_dir (or $SWITCHBOARD_STATE_DIR) at a writable directory")


def _unwritable(state_dir: Path, path: Path, exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (f"state directory {state_dir}: no space left on its disk (writing {path.name} failed);"
                " free some space, or point state_dir at another disk")
    if exc.errno == errno.EROFS:
        return read_only(state_dir)
    return (f"state directory {state_dir} is not writable ({exc.strerror} on {path.name}); give the gateway's"
            f" user write access, or point state_dir (or $SWITCHBOARD_STATE_DIR) elsewhere")
