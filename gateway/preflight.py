"""Checks before a start: what would otherwise fail halfway, as a traceback, or later.

Each problem raises `StartupError` with one line that names the path, key or URL
and the fix. They run before anything is opened for writing, before any platform
connects, so a failed check leaves nothing accepted and then lost.

- `check_state_dir`: the state directory (and the workspace) can be looked up (no
  directory above it the gateway's user may not enter), exists or can be made, is a directory
  the gateway's user can enter, on a writable file system, and has room (bytes and inodes); the
  database, if there is one, is a SQLite file whose pages all pass
  ``PRAGMA quick_check``, and a ``-wal`` file has its database; the workspace is
  a directory.
- `check_model`: the model's ``base_url`` answers HTTP at all (any status will do:
  a 401 is a key problem the turn reports, not an unreachable server), through the
  proxy the environment names, as the model's requests go, and is a base URL, not an endpoint
  (``…/v1/chat/completions``, to which the client would add its path again); its API key holds
  nothing but the printable ASCII every key is written in.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import socket
import sqlite3
import sys
from collections.abc import Mapping
from pathlib import Path

import aiohttp
from yarl import URL

from agent.settings import ModelSettings, api_key_problem, base_url_of
from gateway import state_lock
from gateway.config.rules import endpoint_path_problem
from gateway.config.secret_values import shown_url
from gateway.errors import StartupError
from gateway.host import PRIVATE, STATE_DB
from platforms.proxies import proxy_for

MIN_FREE_BYTES = 1024 * 1024
"""Less free space than this under the state directory stops the start: SQLite could not write."""
MIN_FREE_INODES = 16
"""Fewer free inodes than this under the state directory stops the start: with bytes to spare, SQLite
could still not create the database's ``-wal`` and ``-shm``, nor the gateway its lock file or chat log."""
_WHERE = "state_dir (or $SWITCHBOARD_STATE_DIR)"


def check_state_dir(state_dir: Path, workspace: Path | None = None, *, database: bool = True) -> None:
    """Create the state directory if missing and check what lives in it; see the module doc. With
    ``database=False`` the database is left to `check_database`, for a caller that must hold the
    directory's lock before it opens the database (`gateway.cli`)."""
    state_dir = Path(state_dir).absolute()
    check_state_dir_reachable(state_dir)
    try:
        state_dir.mkdir(mode=PRIVATE, parents=True, exist_ok=True)
    except OSError as exc:
        raise StartupError(f"cannot create the state directory {state_dir} ({exc.strerror}); create it with write"
                           f" access for the gateway's user, or point {_WHERE} elsewhere") from exc
    if not os.access(state_dir, os.R_OK | os.X_OK):
        raise StartupError(f"state directory {state_dir} cannot be entered by the gateway's user (it belongs to"
                           f" {_owner(state_dir)}, mode {state_dir.stat().st_mode & 0o777:04o}); give it to the"
                           f" gateway's user (chown -R), or point {_WHERE} elsewhere")
    if os.statvfs(state_dir).f_flag & os.ST_RDONLY:  # before the database check, which would blame its mode
        raise StartupError(state_lock.read_only(state_dir))
    free = shutil.disk_usage(state_dir).free
    if free < MIN_FREE_BYTES:
        raise StartupError(f"state directory {state_dir}: no space left on its disk ({free:,} bytes free); free"
                           f" some space, or point {_WHERE} at another disk")
    if (inodes := _free_inodes(state_dir)) is not None and inodes < MIN_FREE_INODES:
        raise StartupError(_no_inodes(f"state directory {state_dir}", inodes))
    if database:
        check_database(state_dir / STATE_DB)
    if workspace is not None:
        _check_workspace(Path(workspace).absolute())


def check_state_dir_reachable(state_dir: Path) -> None:
    """The checks of `check_state_dir` that make and change nothing, for a command that only reads it
    (`gateway.inbox_cli`): a name this system can write, no directory above it that cannot be entered, and a
    directory if it exists. Else the path under it reads as missing, and the command blamed an empty state."""
    state_dir = Path(state_dir).absolute()
    _check_nameable(state_dir, "state directory {}: ", f"point {_WHERE}")
    if (problem := _lookup_problem(state_dir)) is not None:
        raise StartupError(f"state directory {state_dir} cannot be reached ({problem}): the gateway's user may not"
                           f" enter a directory above it; give it access, or point {_WHERE} elsewhere")
    if state_dir.exists() and not state_dir.is_dir():
        raise StartupError(f"state directory {state_dir} is a file, not a directory; move the file away, or point"
                           f" {_WHERE} at a directory")


def _free_inodes(directory: Path) -> int | None:
    """The inodes left for the gateway's user on ``directory``'s file system; None where it counts none
    (btrfs and some network file systems report no inodes at all) or cannot be asked."""
    try:
        vfs = os.statvfs(directory)
    except OSError:
        return None
    return vfs.f_favail if vfs.f_files > 0 else None


def _no_inodes(what: str, inodes: int, detail: str = "") -> str:
    """Told apart from a full disk: ``df`` shows free bytes, so "no space" sent the operator to
    the wrong number; SQLite itself said only "unable to open database file"."""
    return (f"{what}: no free inodes left on its disk ({inodes:,} free{detail}): no file can be created there;"
            f" delete some files (`df -i` counts them), or point {_WHERE} at another disk")


def _owner(path: Path) -> str:
    uid = path.stat().st_uid
    try:
        return f"user {pwd.getpwuid(uid).pw_name}"
    except KeyError:  # no name for it here (a uid from another machine or container)
        return f"uid {uid}"


def check_database(db: Path, *, writable: bool = True) -> None:
    """Raise `StartupError` for a state database that cannot be opened as it is (a directory, not
    readable and writable, not SQLite, corrupt), or is missing or empty beside a ``-wal`` that holds
    its last commits; nothing for one that is fine or not there yet. Changes nothing. With
    ``writable=False`` (a listing, `gateway.inbox_cli`), one it may only read, a backup's copy, will do."""
    if not db.exists() or (db.is_file() and db.stat().st_size == 0):
        _check_no_stray_log(db)
        return
    if db.is_dir():
        raise StartupError(f"state database {db} is a directory; move it away (the gateway creates the file)")
    if not writable and not os.access(db, os.R_OK):
        raise StartupError(f"state database {db} is not readable by this user; fix its owner or mode")
    if writable and not os.access(db, os.R_OK | os.W_OK):
        raise StartupError(f"state database {db} is not readable and writable by the gateway's user; fix its"
                           " owner or mode")
    try:
        # Read-only: a check must not change what it checks.
        conn = open_read_only(db, as_is=not writable)  # a start's must open as the gateway's will
        try:
            # Every page, once (about a second per GB): a damaged table otherwise shows only when a
            # message is written to it, after the platforms connected and began handing them over.
            (verdict,) = conn.execute("PRAGMA quick_check(1)").fetchone()
            if verdict != "ok":
                detail = " ".join(verdict.replace("*** in database main ***", "").split())  # one line
                raise sqlite3.DatabaseError(f"database disk image is malformed: {detail}")
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        line = describe_database_error(db, exc)
        wal = db.with_name(db.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            # SQLite reads a -wal as the database's own, whichever database left it: a backup copied
            # over the database of a gateway that did not stop cleanly is read with that one's log.
            line += (f"; if a backup was just put in its place, move {wal.name} and {db.name}-shm away: they"
                     " are the log of the database it replaced")
        raise StartupError(line) from exc


def open_read_only(db: Path, *, as_is: bool = True) -> sqlite3.Connection:
    """A connection to ``db`` that cannot write it: SQLite's ``mode=ro``. A database in WAL mode needs
    its ``-shm`` for that, which SQLite creates beside it; where it cannot (a backup's copy on a
    read-only mount) and no ``-wal`` holds commits the file lacks, the file is read ``as_is``
    (``immutable``): nothing can be writing it there. So is one with no ``-wal`` (nor rollback
    ``-journal``) at all, whose gateway is not running: ``mode=ro`` would leave an empty ``-wal`` and
    a ``-shm`` behind, the reader's files, which a gateway running as another user could not open.
    A gateway starting meanwhile writes its log, not the file, until its first checkpoint."""
    uri = db.absolute().as_uri()
    if as_is and not any(db.with_name(db.name + end).exists() for end in ("-wal", "-journal")):
        return _opened(sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, timeout=5.0))
    try:
        return _opened(sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=5.0))
    except sqlite3.OperationalError as exc:
        wal = db.with_name(db.name + "-wal")
        if not as_is or "unable to open" not in str(exc) or (wal.exists() and wal.stat().st_size > 0):
            raise
    return _opened(sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, timeout=5.0))


def _opened(conn: sqlite3.Connection) -> sqlite3.Connection:
    """``conn``, once SQLite has read the file: `sqlite3.connect` opens it lazily."""
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def _check_no_stray_log(db: Path) -> None:
    """A ``-wal`` with no database to go with it holds the last commits of one that was moved or
    lost: SQLite would start an empty database and delete the ``-wal``, and them with it."""
    wal = db.with_name(db.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise StartupError(f"{wal} holds the last commits of a database, but {db} is missing or empty; put the"
                           " database back next to it, or move the -wal (and -shm) away too to start afresh")


def describe_database_error(db: Path, exc: sqlite3.Error) -> str:
    """One line for a SQLite error on the state database, with the fix."""
    text = str(exc)
    if "not a database" in text or "malformed" in text:
        what = "is not a SQLite database" if "not a database" in text else "is corrupt"
        return (f"state database {db} {what} ({text}); move it away to start afresh (sessions and pending"
                " messages are lost), or restore a backup")
    if "disk is full" in text:
        return f"state database {db}: no space left on its disk ({text}); free some space"
    if "locked" in text or "busy" in text:
        return f"state database {db} is locked by another program ({text}); stop it and start again"
    if "readonly" in text or "read-only" in text:
        return f"state database {db} is read-only ({text}); make it and its directory writable"
    if "unable to open" in text and (inodes := _free_inodes(db.parent)) is not None and inodes < MIN_FREE_INODES:
        return _no_inodes(f"state database {db}", inodes, f"; {text}")
    return f"state database {db}: {text}; check the file and its directory"


def _lookup_problem(path: Path) -> str | None:
    """Why ``path`` cannot be looked up (a directory above it the gateway's user may not enter, where
    `Path.exists` raises instead of saying False), None when it can."""
    try:
        path.exists()
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


def _check_nameable(path: Path, what: str, elsewhere: str) -> None:
    """A name this system's file name encoding cannot write (``✓`` in a Latin-1 or ASCII locale) raised
    `UnicodeEncodeError` at the first look at it, a traceback naming neither the setting nor a cure."""
    try:
        os.fsencode(path)
    except UnicodeEncodeError as exc:
        raise StartupError(f"{what.format(ascii(str(path)))}the name holds {ascii(exc.object[exc.start:exc.end])},"
                           f" which file names here cannot ({sys.getfilesystemencoding()}, from the locale): set a"
                           f" UTF-8 locale (LANG=C.UTF-8) or PYTHONUTF8=1, or {elsewhere} at a plain name") from None


def _check_workspace(workspace: Path) -> None:
    _check_nameable(workspace, "agent.workspace: {}: ", "set agent.workspace")
    if (problem := _lookup_problem(workspace)) is not None:
        raise StartupError(f"agent.workspace: cannot reach {workspace} ({problem}): the gateway's user may not enter"
                           " a directory above it; give it access, or set agent.workspace to a directory it can write")
    if workspace.exists() and not workspace.is_dir():
        raise StartupError(f"agent.workspace: {workspace} is a file, not a directory; move it away or set"
                           " agent.workspace to a directory")
    try:
        workspace.mkdir(mode=PRIVATE, parents=True, exist_ok=True)
    except OSError as exc:
        raise StartupError(f"agent.workspace: cannot create {workspace} ({exc.strerror}); create it, or set"
                           " agent.workspace to a writable directory") from exc


async def check_model(settings: ModelSettings, *, timeout: float = 10.0,
                      env: Mapping[str, str] | None = None) -> None:
    """For the ``openai`` provider: raise `StartupError` naming ``model.base_url`` (or
    ``$OPENAI_BASE_URL``, when the server comes from there) when nothing answers HTTP there
    within ``timeout`` (or the model's own timeout, if shorter), and naming ``model.api_key`` (or
    ``$OPENAI_API_KEY``) when the key holds a character no key has (`agent.settings.api_key_problem`). The
    latter, and a ``base_url`` that is no http(s) URL or an endpoint (`endpoint_path_problem`), are ``lasting``:
    only the operator can mend them."""
    if settings.provider != "openai":
        return
    env = os.environ if env is None else env
    if (problem := api_key_problem(settings, env)) is not None:
        raise StartupError(problem, lasting=True)  # the same key is refused at every start
    url = base_url_of(settings, env).rstrip("/")
    where = "$OPENAI_BASE_URL" if not settings.base_url and env.get("OPENAI_BASE_URL") else "model.base_url"
    shown = shown_url(url)
    try:
        target = URL(url + "/models")
        if not target.is_absolute() or target.scheme not in ("http", "https"):
            raise ValueError("not an http(s) URL")
    except ValueError as exc:
        # No URL at all, unlike an unreachable one: no server coming up can mend it.
        raise StartupError(f"{where}: {shown} is not a usable URL ({exc}); write it like"
                           " http://127.0.0.1:11434/v1", lasting=True) from None
    if (problem := endpoint_path_problem(url)) is not None:  # it answers, with a 404 to every turn
        raise StartupError(f"{where}: {problem}", lasting=True)
    limit = aiohttp.ClientTimeout(total=min(timeout, settings.timeout_seconds))
    try:
        # Through the proxy the environment names (and not for a host no_proxy exempts), as the model's own client
        # (httpx) goes: a server reached only through one was "cannot reach", and no start ever passed. Chosen as
        # the platforms choose (`platforms.proxies`), which reads a no_proxy address range as httpx does.
        async with (aiohttp.ClientSession(timeout=limit) as client,
                    client.get(target, allow_redirects=False, proxy=proxy_for(str(target)))):
            return  # any answer at all: the server is there
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        reason = _reason(exc)
    raise StartupError(f"{where}: cannot reach {shown} ({reason}); start the model server, or fix"
                       f" {where} (and the network or proxy between)")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return "no answer in time"
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        # Not the model server's fault, so not told as its; the proxy's address is left out: it may hold a password.
        inner = exc.os_error
        why = ("connection refused" if isinstance(inner, ConnectionRefusedError)
               else "unknown host" if isinstance(inner, socket.gaierror) else inner.strerror or type(inner).__name__)
        return f"the proxy $http_proxy or $https_proxy names cannot be reached: {why}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        inner = exc.os_error
        if isinstance(inner, ConnectionRefusedError):
            return "connection refused: nothing listens there"
        if isinstance(inner, socket.gaierror):
            return f"unknown host {exc.host}"
        return inner.strerror or type(inner).__name__ if inner is not None else "cannot connect"
    # Named by type only: an aiohttp error's text may carry the URL, and a URL may carry a key.
    return type(exc).__name__
