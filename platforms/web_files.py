"""Files the agent sent to a web chat or a webhook route, kept for their callers to download.

The outbox removes its copy of a file (`OutboundFile`) once the send is settled, but the page's
link must work after that, and after a reload. So sending one makes the web chat's own copy:
``<root>/<id>/data`` (the bytes; a hard link to the outbox's copy where the disk allows, else a
copy) and ``<root>/<id>/meta.json`` (the chat, the name, the size, when). ``<id>`` is derived
from the send's outbox key (`WebFiles.id_for`, 144 bits of its HMAC-SHA256): the outbox sends a
file again when the process died before it recorded the send, and that try finds its file kept
and announces the same download, not a second copy under another id. The HMAC's key is random,
made once and kept in ``<root>/.id-key``: outbox keys follow from turn ids, which are a counter
(``agent._ids``), so a plain hash of one named the next chat's file to anyone who had seen one
turn id. A send without a key gets a random id. A download must name the chat too, which is
checked: a link gives away no other chat's file. Each is written in a staging folder, flushed to
disk (its files, then the folder's names for them) and renamed whole, so a folder that exists is
complete, also after a power cut. What is kept is the chat's and the gateway's only, as the outbox's copy
is: folders 0700, the copy and ``meta.json`` 0600 (`FILE_MODE`) whatever the umask.

A file is kept as long as the chat's messages are (``keep_seconds``: the gateway passes the
outbox's seven days), so the message and its link go together; `sweep` removes older ones,
and staging folders a crash left. Until then a file takes its space on the disk: that is the
price of a link that keeps working. The sweep runs beside sends (in a thread of its own): an id
it found expired may be kept anew meanwhile (the outbox trying a send again), so it moves the
folder aside before it removes it, and puts it back if it turns out to be the new one. A download
in flight keeps reading a file swept under it (POSIX keeps its bytes while it is open); one that
starts after the sweep is answered 404, as the file had expired.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import BinaryIO
from urllib.parse import quote

from platforms.base import OutboundFile, scalar_text

log = logging.getLogger("platforms.web")

FILE_ID = re.compile(r"[A-Za-z0-9_-]{24}")
_DATA, _META = "data", "meta.json"
_ID_KEY = ".id-key"
"""The key of `WebFiles.id_for`, in the root: removed, the files already kept keep their ids."""
FILE_MODE = 0o600
"""The mode of a copy made where no hard link can be (the link shares the outbox's copy, 0600 too) and of
``meta.json``: by the umask alone (0022 under systemd and Docker) they were 0644, a chat's file and its name
for every user of the machine to read once their folder is not 0700 (a restore, a copied state dir)."""
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
_STAGING_GRACE = 3600.0
"""A staging folder this old (by its mtime) was left by a crash, not being written now."""
SAFE_TYPES = {
    ".txt": "text/plain", ".csv": "text/csv", ".json": "application/json", ".pdf": "application/pdf",
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
    ".webp": "image/webp", ".zip": "application/zip",
}  # fmt: skip
"""The content types a download may carry: none of them runs script in the page's origin (no HTML,
SVG or XML). Anything else is ``application/octet-stream``."""


@dataclass(frozen=True, slots=True)
class KeptFile:
    id: str
    chat_id: str
    name: str
    size: int
    time: float
    path: Path
    """The bytes."""

    def shown(self) -> dict[str, object]:
        """What a message carries about it (``file`` in the page's messages)."""
        return {"id": self.id, "name": self.name, "size": self.size}


class WebFiles:
    """``label`` names the platform in the log (``web chat``, ``webhook``)."""

    def __init__(self, root: Path, *, keep_seconds: float, clock: Callable[[], float] = time.time,
                 label: str = "web chat") -> None:
        self.root = root
        self.keep_seconds = keep_seconds
        self._clock = clock
        self._label = label
        self._id_key: bytes | None = None
        self._id_key_lock = threading.Lock()  # keeps run in threads: one key is made, not two

    def id_for(self, key: str) -> str:
        """The id of the file sent under the outbox key ``key``: the same for every try of the send,
        after a restart too, and not to be worked out from the key without ``<root>/.id-key``
        (made on first use). Raises OSError when that key can be neither read nor made. Blocking."""
        digest = hmac.new(self._key(), key.encode("utf-8"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:18]).decode("ascii")

    def derived_id(self, purpose: str) -> str:
        """An id of this store's own for ``purpose`` (16 of ``[A-Za-z0-9_-]``): the same at every start while
        ``<root>/.id-key`` is kept, another for another purpose or store. An HMAC under that key, apart from every
        file's (a NUL no outbox key holds leads it), so an id published tells nothing of the key nor of a file's id.
        Raises OSError as `id_for` does. Blocking."""
        digest = hmac.new(self._key(), b"\0" + purpose.encode("utf-8"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:12]).decode("ascii")

    def keep(self, chat_id: str, file: OutboundFile, *, key: str | None = None,
             file_id: str | None = None) -> KeptFile:
        """Keep ``file`` for the chat under ``file_id`` (24 of ``[A-Za-z0-9_-]``), by default `id_for`
        the send's outbox ``key``, or a new random one without. A ``file_id`` already kept is kept
        once: that file is returned as it is, also when another try kept it meanwhile. One expired or
        unreadable is replaced whole: its id never names a half-written or half-removed folder.
        Raises OSError when it cannot. Blocking."""
        if file_id is None and key is not None:
            file_id = self.id_for(key)
        if file_id is not None and (kept := self.get(file_id)) is not None:
            return kept
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        file_id = file_id or secrets.token_urlsafe(18)
        staging = self.root / f".{secrets.token_urlsafe(12)}.tmp"  # its own: a crash may have left one
        staging.mkdir(mode=0o700)
        try:
            try:  # the outbox's copy is complete and fsynced, and only ever removed: share it
                os.link(file.path, staging / _DATA)
            except OSError:  # another file system, or one without hard links
                with open(file.path, "rb") as source, _created(staging / _DATA) as copy:
                    shutil.copyfileobj(source, copy)
                _fsync(staging / _DATA)
            kept = KeptFile(file_id, chat_id, scalar_text(file.name), os.stat(staging / _DATA).st_size,
                            self._clock(), self.root / file_id / _DATA)
            meta = {"chat_id": chat_id, "name": kept.name, "size": kept.size, "time": kept.time}
            with _created(staging / _META) as written:
                written.write(json.dumps(meta).encode("utf-8"))
            _fsync(staging / _META)
            _flush_folder(staging)  # its names: else the folder renamed into place could come back without them
            try:
                staging.rename(self.root / file_id)  # never onto a folder with files in it: the first try stands
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                if (other := self.get(file_id)) is not None:
                    return other
                # Expired or unreadable, yet asked for again: moved aside whole, so the id names the
                # new folder or none while the old one is removed.
                old = self.root / f".{secrets.token_urlsafe(12)}.tmp"
                try:
                    (self.root / file_id).rename(old)
                except FileNotFoundError:
                    pass  # the sweep moved it aside meanwhile, and removes it
                staging.rename(self.root / file_id)
                shutil.rmtree(old, ignore_errors=True)
            _flush_folder(self.root)
            return kept
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)

    def find(self, chat_id: str, file_id: str) -> KeptFile | None:
        """The file ``file_id`` when it is the chat's and still kept; else None. Blocking (one small read)."""
        kept = self.get(file_id)
        return kept if kept is not None and kept.chat_id == chat_id else None

    def get(self, file_id: str) -> KeptFile | None:
        """The file ``file_id``, whichever chat it was sent to, while it is kept; else None.
        Blocking (one small read)."""
        if not FILE_ID.fullmatch(file_id):
            return None
        meta = self._meta(self.root / file_id)
        if meta is None or not isinstance(meta.get("chat_id"), str) or self._expired(meta):
            return None
        return KeptFile(file_id, meta["chat_id"], meta["name"], meta["size"], meta["time"],
                        self.root / file_id / _DATA)

    def sweep(self) -> int:
        """Remove the files kept longer than ``keep_seconds``, unreadable ones and staging folders a
        crash left; returns how many went. Blocking."""
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return 0
        gone = 0
        for entry in entries:
            if entry.name == _ID_KEY:
                continue
            meta = None if entry.name.startswith(".") else self._meta(Path(entry.path))
            if meta is not None and not self._expired(meta):
                continue
            if meta is None and time.time() - _mtime(entry) < _STAGING_GRACE:  # mtimes are wall-clock
                continue  # being written now, or just renamed into place
            doomed = entry.path if entry.name.startswith(".") else self._moved_aside(entry.name)
            if doomed is None:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(doomed, ignore_errors=True)
            else:  # a key being made when the process died
                Path(doomed).unlink(missing_ok=True)
            gone += 1
        if gone:
            log.info("%s: removed %d sent files older than %.0f days", self._label, gone, self.keep_seconds / 86400)
        return gone

    async def sweep_every(self, seconds: float) -> None:
        """`sweep` now and every ``seconds``, until cancelled; a failed sweep is logged and tried again."""
        while True:
            try:
                await asyncio.to_thread(self.sweep)
            except Exception:
                log.exception("%s: removing expired sent files failed", self._label)
            await asyncio.sleep(seconds)

    def _moved_aside(self, file_id: str) -> str | None:
        """The staging name the folder ``file_id``, read as expired, now has; None when it was kept anew
        since (a send tried again): then it is back in place, or the new one is. Removed where it was,
        it could be the new folder, which `keep` had just announced."""
        aside = self.root / f".{secrets.token_urlsafe(12)}.tmp"
        try:
            (self.root / file_id).rename(aside)
        except FileNotFoundError:
            return None
        meta = self._meta(aside)
        if meta is None or self._expired(meta):
            return str(aside)
        try:
            aside.rename(self.root / file_id)
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            shutil.rmtree(aside, ignore_errors=True)  # kept anew once more meanwhile: that one stands
        return None

    def _key(self) -> bytes:
        with self._id_key_lock:
            if self._id_key is None:
                self._id_key = self._read_or_make_key()
            return self._id_key

    def _read_or_make_key(self) -> bytes:
        path = self.root / _ID_KEY
        try:
            key = path.read_bytes()
        except FileNotFoundError:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            made = self.root / f".{secrets.token_urlsafe(12)}.tmp"
            fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, secrets.token_bytes(32))
                os.fsync(fd)
            finally:
                os.close(fd)
            made.rename(path)  # none there, and this process alone makes one (`_key`)
            _flush_folder(self.root)
            key = path.read_bytes()
        if len(key) < 16:
            raise OSError(errno.EINVAL, f"{path} is not a key (remove it: a new one is made)")
        return key

    def _expired(self, meta: dict) -> bool:
        return self._clock() - meta["time"] >= self.keep_seconds

    @staticmethod
    def _meta(folder: Path) -> dict | None:
        try:
            meta = json.loads((folder / _META).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        valid = (isinstance(meta, dict) and isinstance(meta.get("name"), str) and isinstance(meta.get("size"), int)
                 and isinstance(meta.get("time"), (int, float)))  # fmt: skip
        return meta if valid else None


def download_headers(name: str) -> dict[str, str]:
    """Headers for serving the file ``name`` as a download that nothing can show in the page's origin."""
    fallback = "".join(c if " " <= c <= "~" and c not in '"\\;%' else "_" for c in name) or "file"
    return {
        "Content-Type": SAFE_TYPES.get(PurePath(name).suffix.lower(), "application/octet-stream"),
        # RFC 6266: the quoted ASCII name for old clients, the exact one percent-encoded (RFC 8187).
        "Content-Disposition": f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}",
        "X-Content-Type-Options": "nosniff",
        # Opened as a page after all (a link copied into the address bar), it still runs nothing.
        "Content-Security-Policy": "default-src 'none'; sandbox",
        "Cache-Control": "private, no-store",
        "Referrer-Policy": "no-referrer",
    }


def _created(path: Path) -> BinaryIO:
    """``path`` made anew (FileExistsError when it is there), `FILE_MODE` before the umask, open to write."""
    return os.fdopen(os.open(path, _CREATE, FILE_MODE), "wb")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _flush_folder(path: Path) -> None:
    """`_fsync` of a folder, where its file system can: one that flushes no folders (EINVAL: some
    network and FUSE mounts) is warned of, and the file kept as well as it keeps names, not
    refused (every file sent to the chat would be). Other errors raise."""
    try:
        _fsync(path)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        log.warning("the folder %s could not be flushed to disk (%s): its file system flushes no folders,"
                    " and a power cut may lose a file just kept in it", path, exc.strerror or exc)


def _mtime(entry: os.DirEntry) -> float:
    try:
        return entry.stat().st_mtime
    except OSError:
        return 0.0
