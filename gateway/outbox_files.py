"""The gateway's own copies of the files the agent sends, kept until their sends are settled.

`send_file` copies the workspace file here before it journals the send, so what goes out is
what was asked for: the copy is read from the descriptor its checks were made on
(`agent.tools.send_file.open_to_send`), and editing or deleting the workspace file afterwards,
or a crash and a restart, changes nothing. Each send has a folder named after its outbox key (escaped like a
memory file, `gateway.file_names`) holding one file under the name the chat will see (`sent_name`). A copy is
written into a temporary folder, flushed to disk (the file, then the folder's name for it), and
renamed into place whole, so a folder that exists holds a complete file, also after a power
cut. The outbox removes a copy once its send is sent or dropped; a failed send keeps it for
the console's retry until it is dismissed, or its row is forgotten. `sweep` removes what
no pending or failed send names (a copy whose send was never journaled: the process died in
between), at start and at each retention sweep.
"""

from __future__ import annotations

import io
import logging
import os
import shutil
import unicodedata
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from agent._durable import flush_folder
from agent.tools.send_file import FileToSend, human_size, open_to_send
from gateway.file_names import file_name
from platforms.base import OutboundFile

log = logging.getLogger("gateway.outbox")

FOLDER = "outbox-files"
"""Under the state directory."""
_CHUNK = 1024 * 1024
FILE_MODE = 0o600
"""A copy's mode: what the agent sends a chat is the chat's and the gateway's, as what people send it is
(`gateway.attachments.FILE_MODE`). Explicit, as the umask alone (0022 under systemd and Docker) left it 0644,
for every user of the machine to read once the copy's folder is not 0700 (a restore, a copied state dir)."""
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def _made_before(entry: os.DirEntry, when: float) -> bool:
    try:
        return entry.stat().st_mtime < when
    except FileNotFoundError:  # a copy's temporary folder, renamed or removed by its thread meanwhile
        return False


def sent_name(name: str) -> str:
    """``name`` as the chat sees it: each control character (a newline, a tab), bidirectional control
    (a right-to-left override: ``<RLO>cod.exe`` shows as ``exe.doc``) or byte of a name that is not
    UTF-8 one ``_``. The platforms' SDKs put the name in a multipart header, which aiohttp refuses for a
    CR or LF: such a file never reached the chat, though the model was told it was queued."""
    return "".join("_" if char in _BIDI or unicodedata.category(char) in ("Cc", "Cs") else char for char in name)


_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


class FileChanged(Exception):
    """The file grew past the limit, or was emptied, while it was copied; the message says which."""


class OutboxFiles:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _folder(self, key: str) -> Path:
        return self.root / file_name(key)

    def keep(self, key: str, file: FileToSend, limit: int, where: str) -> int:
        """Copy ``file`` as the copy of the send ``key`` (replacing one an earlier run left) and
        return its size. Raises `ToolError` when it is not one to send now (`open_to_send`, with
        ``limit`` and ``where``), `FileChanged` when it grows past ``limit`` or is emptied while it
        is copied, OSError when it cannot be copied. Blocking."""
        source, _ = open_to_send(file, limit, where)
        with source:
            return self._copy(key, source, file, limit)

    def keep_bytes(self, key: str, name: str, data: bytes) -> int:
        """Keep ``data`` (not empty) as the copy of the send ``key``, named ``name``, as `keep` keeps a file (a
        message too long for its chat: `gateway.long_messages`). OSError when it cannot be written. Blocking."""
        return self._copy(key, io.BytesIO(data), FileToSend(Path(name), name, None), len(data))

    def _copy(self, key: str, source: BinaryIO, file: FileToSend, limit: int) -> int:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        staging = self.root / f".{uuid.uuid4().hex}.tmp"
        staging.mkdir(mode=0o700)
        try:
            size = 0
            with os.fdopen(os.open(staging / sent_name(file.path.name), _CREATE, FILE_MODE), "wb") as copy:
                while chunk := source.read(_CHUNK):
                    size += len(chunk)
                    if size > limit:  # it grew since it was measured: never more than the platform takes
                        raise FileChanged(f"{file.shown!r} grew past {human_size(limit)} while it was being sent")
                    copy.write(chunk)
                copy.flush()
                os.fsync(copy.fileno())
            if size == 0:
                raise FileChanged(f"{file.shown!r} was emptied while it was being sent")
            flush_folder(staging)  # its name for the file: else the folder renamed in could come back empty
            folder = self._folder(key)
            if folder.exists():
                shutil.rmtree(folder)
            staging.rename(folder)
            flush_folder(self.root)
            return size
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)

    def get(self, key: str) -> OutboundFile | None:
        """The copy of the send ``key``; None when there is none."""
        try:
            entries = list(os.scandir(self._folder(key)))
        except FileNotFoundError:
            return None
        return next((OutboundFile(e.path, e.name, e.stat().st_size) for e in entries if e.is_file()), None)

    def remove(self, key: str) -> None:
        shutil.rmtree(self._folder(key), ignore_errors=True)

    def sweep(self, kept: Iterable[str], *, made_before: float | None = None) -> int:
        """Remove every copy (and temporary folder) but those of the keys in ``kept``; returns how
        many went. Only while nothing is being sent or kept (at start), unless ``made_before`` (epoch
        seconds) spares what was made since: a copy being made, or made and not journaled yet."""
        if not self.root.is_dir():
            return 0
        keep = {file_name(key) for key in kept}
        gone = 0
        for entry in os.scandir(self.root):
            if entry.name not in keep and (made_before is None or _made_before(entry, made_before)):
                shutil.rmtree(entry.path, ignore_errors=True)
                gone += 1
        if gone:
            log.info("outbox: removed %d copies of files whose sends were settled or never journaled", gone)
        return gone
