"""Files users send, from the platform to the model.

`turn_input` turns a message with attachments into the turn's input. Each file is
downloaded through its adapter (`platforms.base.SupportsDownload`), which refuses
anything over the platform's ``max_attachment_bytes``, and stored in the session's
workspace under ``attachments/<platform>/<chat id>/`` (`chat_folder`, `store`):

- **images** (at most `MAX_IMAGES` per turn, as for subagents) reach a vision model
  as image parts (OpenAI-style content parts, via `agent.images`, which fits each
  to at most 2048 px once, as it enters the conversation); a model
  without vision gets their workspace paths and a hint instead, once they are decoded within
  the same limits (not fitted: `agent.images.picture_problem`). What is an image is
  decided by the bytes (`gateway.file_contents.content_type`), not by the platform's label nor the type
  stated: a PNG sent as a document typed application/pdf is one (the model is told
  the type it was sent under), and text, HTML or SVG typed image/png never is. Images
  past the eighth shown are listed as files (one the decoder refuses gives its place to the next, up to
  `MAX_DECODED` decoded);
  a photo a vision model is not sent because it cannot be decoded is among the files that
  did not reach the model (a document, or text, whose first bytes only name a picture is
  listed as a file), and so is a HEIC or AVIF picture (`gateway.file_contents.heif`), of which the user
  is told too.
- **documents** are listed in the text with their workspace path, size and type, so
  the model can read them with its file tools (names and stated types, the sender's, one bounded line:
  `gateway.file_contents.plain`): the type stated, when the bytes bear it
  out or tell nothing, else what they hold beside it (`gateway.file_contents.type_said`: "stated image/png,
  but the content is text").
- **voice** messages are transcribed when ``model.transcription.name`` is set (the
  transcript becomes the turn's text); otherwise the user is told that voice is
  not supported.

A download that fails for a while (the platform's 429, a network error, a 5xx) is
tried again, up to `DOWNLOAD_TRIES` times in all, after the wait a 429 asks for, else
after `BACKOFF_FIRST` seconds, doubled at each try; the waits of one message's files
add up to at most `RETRY_WAIT_MAX` seconds (a 429 asking for more than is left is not
waited for). What the platform refuses for good (too large, gone, not allowed) is not
tried again. A stop of the turn cancels `turn_input` (the turn runner does), which ends a
download, a wait or a transcription at once; downloads are held in memory, and a file being
stored is finished first (`_stored`), so a stopped turn leaves no file half-written.

What cannot be taken (too large, a failed download, voice without transcription)
is explained to the user in one message, before the answer (the turn runner sends
none for a turn stopped meanwhile), and the model is told which files it did not
get. When nothing is left for the model (no text, no file), that message is the
whole answer and no turn runs.

Storing is all-or-nothing: a file is written under a temporary name and renamed
into place once complete, so a half-stored file never appears. File names are
made safe (no directories, no leading dots, no control or special characters);
a name already taken by other bytes gets ``-2``, ``-3``..., as does one another
chat sharing the folder is storing a file under at that moment; the same bytes under
the same name (a replay after a restart) reuse the file. A file that cannot be stored
(something that is not a folder in the way of the chat's, a symlink on the way to it, a full
disk) is explained to the user like a failed download and logged as an error naming the path
in the way. A symlink put on the way after the check (by ``execute_code``) is not followed: the
folders are opened one at a time from the root, following no symlink, and the file is written
by name in the chat's (`agent.tools._open_unfollowed.open_directory`).

A chat's files are for that chat only: its session's file tools (and its subagents')
get a `chat_file_scope` that keeps them out of every other chat's folder, on every
platform. Files stored before chats had folders of their own, under
``attachments/<session id>/``, stay where they are and are not confined.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import itertools
import logging
import os
import re
import stat
import threading
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent import SYSTEM_CLOCK, Clock, ModelError, ToolError
from agent._durable import write_whole
from agent.images import MAX_IMAGES, first_turn_content_async, picture_problem_async, with_text
from agent.settings import ModelSettings
from agent.tools import FileScope, resolve_in_workspace
from agent.tools._open_unfollowed import is_swapped, open_directory
from gateway import file_contents
from gateway.config.platform_settings import PLATFORM_NAMES
from gateway.events import GatewayEvents
from gateway.file_names import file_name
from platforms.base import (
    Adapter,
    Attachment,
    AttachmentTooLarge,
    DeliveryError,
    Forbidden,
    Inbound,
    KeptElsewhere,
    NetworkError,
    RateLimited,
    SupportsDownload,
)

log = logging.getLogger("gateway.attachments")

FOLDER = "attachments"
MAX_NAME = 100
VOICE_UNSUPPORTED = "Voice messages aren't supported here yet — please type your message instead."
_MARKS = frozenset({"Mn", "Mc"})
"""Combining marks: the vowel signs of Devanagari, Tamil or Thai, Arabic's vowels, accents."""
_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]")
"""ASCII punctuation, each of which Markdown lets a backslash escape."""
_UNSHOWN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Control characters and the marks that set the direction of text. A name holding a right-to-left override
("invoice<U+202E>fdp.exe", shown "invoiceexe.pdf" to hide an .exe) turned the rest of its note's line around
too: "…from telegram; please send it again." read backwards."""
FOLDER_MODE = 0o700
FILE_MODE = 0o600
"""The modes of the folders `store` makes and the files it writes: what people send is theirs and the
gateway's, as the state directory is. Explicit, as the umask alone (0022 under systemd and Docker) left
them 0755 and 0644, for every user of the machine to read wherever the workspace is not 0700 itself."""
_PART = re.compile(r"\..+\.[0-9a-f]{32}\.part")
"""The name `store` writes a file under until it is complete."""
DOWNLOAD_TRIES = 4
"""Tries of one file's download that fails for a while: a 429, a network error, a 5xx."""
BACKOFF_FIRST = 0.5
"""Seconds before the second try of a download that failed without saying how long to wait (as the
outbox's first); doubled at each later try."""
MAX_DECODED = MAX_IMAGES + 2
"""Pictures of one message decoded at most, as each refused gives its place to the next: as many as an album or a
message holds on Telegram and Discord (10), so that none of theirs is listed undecoded, while a message of more,
each refused, is not decoded whole (each of 40 million pixels takes up to a second and 150 MB)."""
RETRY_WAIT_MAX = 30.0
"""Seconds the downloads of one message's files wait, in all, between tries: the user is waiting for
the answer, and would rather send a file again than wait minutes to hear it is lost."""


@dataclass(slots=True)
class Prepared:
    """What a message's files give the turn."""

    content: str | list[dict[str, Any]] | None
    """The turn's input: text, or content parts with images; None when nothing is left for the model."""
    notes: list[str] = field(default_factory=list)
    """Sentences for the user about files that could not be taken."""


# -- whose folder ----------------------------------------------------------------------------------

def chat_folder(platform: str, chat_id: str) -> str:
    """The folder of a chat's files inside `FOLDER`: ``<platform>/<chat id>``, each escaped
    like the chat's memory file (`gateway.file_names`)."""
    return f"{file_name(platform)}/{file_name(chat_id)}"


def chat_file_scope(platform: str, chat_id: str) -> FileScope:
    """What a chat's file tools may not touch: every platform's attachment folder but this
    chat's own. Legacy ``attachments/<session id>/`` folders are not in it."""
    platforms = sorted({*PLATFORM_NAMES, platform})
    return FileScope(private=tuple(f"{FOLDER}/{file_name(p)}" for p in platforms),
                     own=f"{FOLDER}/{chat_folder(platform, chat_id)}")


# -- storing ----------------------------------------------------------------------------------

def safe_name(name: str, fallback: str = "file") -> str:
    """A file name that stays in its folder: no directories, no leading dot, only letters (with
    their combining marks), digits, ``_``, ``-`` and ``.``, each run of anything else one ``_``;
    at most `MAX_NAME` bytes in UTF-8, extension kept."""
    name = unicodedata.normalize("NFKC", name).replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join("".join(run) if kept else "_" for kept, run in itertools.groupby(name, _kept))
    stem, _, ext = name.partition(".")
    if stem and not stem.strip("._-") and ext.strip("._-"):
        # Nothing of the stem was kept ("📊.xlsx"): stripped, the extension became the whole name, "xlsx", a
        # file no tool that goes by its extension (a spreadsheet reader) would take for what it is.
        name = f"{fallback}.{ext}"
    name = name.strip("._-")
    if not name:
        return fallback
    # File systems limit a name's bytes (255 on most), not its characters, and `store` adds a
    # temporary prefix and suffix: 100 CJK characters would be 300 bytes.
    if len(name.encode()) > MAX_NAME:
        stem, dot, ext = name.rpartition(".")
        ext = ext[:16] if dot and stem else ""
        budget = MAX_NAME - len(ext.encode()) - 1
        name = name.encode()[:budget].decode(errors="ignore").rstrip("._-") + (f".{ext}" if ext else "")
    return name


def _kept(char: str) -> bool:
    # A mark is part of the letter before it: without it "रिपोर्ट" (report) would be "र_प_र_ट".
    return char.isalnum() or char in "_.-" or unicodedata.category(char) in _MARKS


def store(workspace: Path, folder: str, name: str, data: bytes) -> str:
    """Write ``data`` as ``<name>`` (made safe) in ``attachments/<folder>`` inside ``workspace`` and
    return its workspace-relative path. ``folder`` is a `chat_folder`. Blocking: call it in a worker
    thread."""
    relative = f"{FOLDER}/{folder}"
    try:
        directory = resolve_in_workspace(workspace, relative)
    except ToolError:
        # A symlink on the way that leads out of the workspace (made with execute_code): an OSError, so
        # the chat is told and the turn goes on, as for a file in the way; raised as it was, it broke the turn.
        raise _link_refused(workspace, relative, out=True) from None
    if directory != workspace.resolve() / FOLDER / folder:
        # A symlink on the way that stays inside (the chat's folder a link to another chat's): followed, this
        # chat's files would land in the other's, for its model to read, and the scope refuses them to this one.
        raise _link_refused(workspace, relative, out=False)
    try:
        # Opened (and made) one folder at a time, following no symlink, and written by name in it: a folder on
        # the way swapped for a symlink since the look above (execute_code, anything writing in the chat's
        # folder) was followed by a write by path, and the file landed wherever the link led.
        opened = open_directory(directory, make_folders=True, mode=FOLDER_MODE)
    except OSError as exc:
        if is_swapped(exc):
            raise _link_refused(workspace, relative, out=_leads_out(workspace, relative)) from None
        if isinstance(exc, (FileExistsError, NotADirectoryError)):
            raise NotADirectoryError(f"cannot store files in {relative}/: {_in_the_way(workspace, relative)} is in"
                                     " the way: it is not a folder") from None
        raise
    try:
        return _store_in(opened, directory, name, data).relative_to(workspace.resolve()).as_posix()
    finally:
        os.close(opened)


def _store_in(opened: int, directory: Path, name: str, data: bytes) -> Path:
    """`store`'s write in the folder ``directory``, open (unfollowed) as ``opened``: every name looked at
    and written relative to ``opened``."""
    base = safe_name(name)
    stem, dot, ext = base.rpartition(".")
    stem, ext = (stem, f".{ext}") if dot and stem else (base, "")
    for n in range(1, 10_000):
        target = base if n == 1 else f"{stem}-{n}{ext}"  # a safe name: it stays in `directory`
        with _claimed(directory / target) as mine:
            if not mine:
                continue
            try:
                there = os.stat(target, dir_fd=opened, follow_symlinks=False)
            except FileNotFoundError:
                write_whole(target, data, temporary=f".{target}.{uuid.uuid4().hex}.part", mode=FILE_MODE,
                            folder=opened)
                return directory / target
            if stat.S_ISREG(there.st_mode) and there.st_size == len(data) and _holds(opened, target, data):
                return directory / target  # the same file again (a replay): keep the one there
    raise FileExistsError(f"no free name for {base} in {directory}")


def _holds(opened: int, name: str, data: bytes) -> bool:
    """Whether the file ``name`` in ``opened`` holds ``data``: read as it is, not through a symlink or a
    FIFO swapped in since it was looked at."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=opened)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        return stat.S_ISREG(os.fstat(fd).st_mode) and f.read(len(data) + 1) == data


def _link_refused(workspace: Path, relative: str, *, out: bool) -> NotADirectoryError:
    """The refusal of ``relative``'s folder, a symlink on its way leading ``out`` of the workspace or not."""
    why = ("is a symlink that leads out of the workspace" if out
           else "is a symlink, and a chat's files are stored only in a folder of its own")
    return NotADirectoryError(f"cannot store files in {relative}/: {_linked(workspace, relative)} {why}")


def _leads_out(workspace: Path, relative: str) -> bool:
    """Whether ``relative`` resolves outside the workspace now (a link swapped in after the check)."""
    root = workspace.resolve()
    target = Path(os.path.realpath(root / relative))
    return target != root and root not in target.parents


_CLAIMS: set[Path] = set()
"""The names `store` is writing now, in another thread, whose files are not in place yet: the chats
of one folder (a Slack channel's threads, a Telegram group's topics) run their turns at once."""
_CLAIMS_LOCK = threading.Lock()


@contextlib.contextmanager
def _claimed(target: Path) -> Iterator[bool]:
    """Whether ``target`` is this thread's to look at and write, until the block ends: False while
    another `store` holds it, which would write its file over this one's, or this one over its."""
    with _CLAIMS_LOCK:
        mine = target not in _CLAIMS
        if mine:
            _CLAIMS.add(target)
    try:
        yield mine
    finally:
        if mine:
            with _CLAIMS_LOCK:
                _CLAIMS.discard(target)


def remove_parts(workspace: Path) -> list[Path]:
    """Remove the incomplete files `store` left in the attachments folders of ``workspace`` when its
    process was killed while writing; returns them. Call only where nothing may be storing now (the
    gateway holds its state directory's lock). Blocking."""
    removed = []
    for directory, _, names in os.walk(workspace / FOLDER):
        for name in names:
            path = Path(directory, name)
            if _PART.fullmatch(name) and not path.is_dir():
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def _linked(workspace: Path, folder: str) -> str:
    """The first of ``folder``'s steps (workspace-relative) that is a symlink."""
    path = workspace.resolve()
    for part in Path(folder).parts:
        path = path / part
        if path.is_symlink():
            break
    return path.relative_to(workspace.resolve()).as_posix()


def _in_the_way(workspace: Path, folder: str) -> str:
    """The first of ``folder``'s steps (workspace-relative) that exists as something other than
    a folder: a file the operator, or a file tool, left where the folder must be."""
    path = workspace.resolve()
    for part in Path(folder).parts:
        path = path / part
        if path.exists() and not path.is_dir():
            break
    return path.relative_to(workspace.resolve()).as_posix()


# -- preparing a turn ----------------------------------------------------------------------------

def _size(n: int | None) -> str:
    if n is None:
        return "unknown size"
    for unit, scale in (("MB", 1024 * 1024), ("KB", 1024)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _sizes(size: int, limit: int) -> tuple[str, str]:
    """``size`` and ``limit`` as `_size` shows them, in bytes when it would show them alike
    ("20.0 MB, which is larger than the 20.0 MB")."""
    shown = _size(size), _size(limit)
    return shown if shown[0] != shown[1] else (f"{size:,} bytes", f"{limit:,} bytes")


_MIN_NAME_SCRUBBED = 3
"""Shorter names are left in: written ``<file>`` wherever they occur, they would garble the reason itself."""


def _unnamed(exc: BaseException, name: str) -> str:
    """``exc``'s text for the log, without the file's name: adapters name the file in a failed download
    ("downloading <name> failed: HTTP 502"), the system the file it could not write (``[Errno 28] No space
    left on device: '.<name>.<hex>.part'``), and the log is the operator's, often shipped where many read it,
    while the name is what the user called their file. Why it failed is what the operator acts on."""
    if isinstance(exc, OSError) and exc.strerror and isinstance(exc.filename, str) and "/" not in exc.filename:
        # A name in the chat's folder, the file's (with -2 added, it is no longer the name sent); a path is a
        # folder's, which the operator may have to mend.
        text = f"[Errno {exc.errno}] {exc.strerror}"
    else:
        text = str(exc)
    # Not `safe_name`'s fallback ("file", for a name of no letter or digit): the gateway's word, not the user's,
    # and the reason's own ("cannot store files in …", "the file is not available yet").
    for shown in sorted({name, safe_name(name, fallback="")}, key=len, reverse=True):
        if len(shown) >= _MIN_NAME_SCRUBBED:
            text = text.replace(shown, "<file>")
    return text


def _named(name: str) -> str:
    """``name`` for a note to the user, which is Markdown: every ASCII punctuation mark escaped, so
    ``__init__.py`` is not shown as a bold "init.py", nor ``1. draft.md`` as a list; without its control
    characters and direction marks (`_UNSHOWN`)."""
    return _PUNCTUATION.sub(r"\\\g<0>", _UNSHOWN.sub("", name)) or "a file"


def _refusal(attachment: Attachment, exc: DeliveryError, platform: str) -> str:
    name = _named(attachment.name)
    if isinstance(exc, AttachmentTooLarge):
        size, limit = _sizes(exc.size, exc.limit) if exc.size else (None, _size(exc.limit))
        return (f"{name}{f' is {size}, which is' if size else ' is'} larger than the {limit} I can take on"
                f" {platform}; please send a smaller file.")
    if isinstance(exc, Forbidden):  # the bot's permissions (a missing scope): sending it again changes nothing
        return f"I'm not allowed to download {name} from {platform}; please tell whoever runs me."
    if isinstance(exc, KeptElsewhere):  # a Google Drive link shared on Slack fails alike however often it is shared
        return (f"I couldn't download {name}: it is a link to a file kept outside {platform}, which has no copy of"
                " it for me; please upload the file itself.")
    return f"I couldn't download {name} from {platform}; please send it again."


def _missed(exc: DeliveryError, platform: str) -> str:
    """Why a download refused did not reach the model, in a word or two for its note."""
    if isinstance(exc, AttachmentTooLarge):
        return "too large"
    return f"a link to a file kept outside {platform}" if isinstance(exc, KeptElsewhere) else "failed"


class _Retries:
    """The waits between the download tries of one message's files, on ``clock``: what is left of
    `RETRY_WAIT_MAX`."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._left = RETRY_WAIT_MAX

    def allow(self, seconds: float) -> bool:
        """Whether a wait of ``seconds`` fits in what is left."""
        return seconds <= self._left

    async def wait(self, seconds: float) -> None:
        """Wait ``seconds`` (an `allow`ed wait)."""
        self._left -= seconds
        await self._clock.sleep(seconds)


async def _download(adapter: SupportsDownload, attachment: Attachment, platform: str, retries: _Retries,
                    events: GatewayEvents) -> bytes:
    """``attachment``'s bytes, tried again (`DOWNLOAD_TRIES`) while it fails for a while and `_Retries`
    allows; raises the last `DeliveryError` (at once for a refusal: too large, gone, not allowed).
    Each 429 is told to ``events``, the last one too."""
    tried, delay = 1, BACKOFF_FIRST
    while True:
        try:
            return await adapter.download(attachment)
        except (RateLimited, NetworkError) as exc:
            if isinstance(exc, RateLimited):
                events.rate_limited(platform, exc.retry_after)
            if isinstance(exc, RateLimited) and exc.retry_after > 0:
                wait = exc.retry_after
            else:
                wait, delay = delay, delay * 2
            if tried == DOWNLOAD_TRIES or not retries.allow(wait):
                raise
            log.info("%s attachment (%s) not downloaded yet: %s: %s; trying again in %.1fs", platform,
                     attachment.kind, type(exc).__name__, _unnamed(exc, attachment.name), wait)
            await retries.wait(wait)
        tried += 1


async def prepare(adapter: SupportsDownload, platform: str, attachments: tuple[Attachment, ...], text: str, *,
                  workspace: Path, folder: str, supports_vision: bool, transcriber: Any = None,
                  clock: Clock = SYSTEM_CLOCK, events: GatewayEvents | None = None) -> Prepared:
    """Download, store and describe ``attachments`` for the model; see the module docstring.
    ``transcriber`` has ``transcribe(audio, filename=, mime_type=)``; None: voice is refused.
    Downloads tried again wait on ``clock``; the platform's 429s are told to ``events`` (the metrics
    count them). Cancelled (the turn was stopped), it ends at once, but for a file being stored,
    which is stored whole first."""
    retries, events = _Retries(clock), events or GatewayEvents()
    notes: list[str] = []
    images: list[_Picture] = []
    files: list[tuple[str, Attachment, str]] = []
    missed: list[str] = []
    spoken: list[str] = []
    for attachment in attachments:
        if attachment.kind == "voice" and transcriber is None:
            if VOICE_UNSUPPORTED not in notes:
                notes.append(VOICE_UNSUPPORTED)
            missed.append(f"{_plain_name(attachment)} (a voice message; voice is not supported)")
            continue
        try:
            data = await _download(adapter, attachment, platform, retries, events)
            if len(data) > adapter.max_attachment_bytes:  # an adapter that did not stop in time
                raise AttachmentTooLarge("too large", size=len(data), limit=adapter.max_attachment_bytes)
        except DeliveryError as exc:
            # Why, for the operator (log lines are redacted): a missing permission is theirs to fix.
            log.log(logging.WARNING if isinstance(exc, Forbidden) else logging.INFO,
                    "%s attachment (%s) not taken: %s: %s", platform, attachment.kind, type(exc).__name__,
                    _unnamed(exc, attachment.name))
            notes.append(_refusal(attachment, exc, platform))
            missed.append(f"{_plain_name(attachment)} ({_missed(exc, platform)})")
            continue
        if attachment.kind == "voice":
            transcript = await _transcribe(transcriber, data, attachment, notes)
            if transcript is None:
                missed.append(f"{_plain_name(attachment)} (a voice message; transcription failed)")
            elif transcript:
                spoken.append(transcript)
            continue
        try:
            path = await _stored(workspace, folder, attachment.name, data)
        except OSError as exc:  # the operator's to fix (a file in the way, a full disk): the chat is told
            log.error("%s attachment (%s) not stored: %s", platform, attachment.kind, _unnamed(exc, attachment.name))
            notes.append(f"I couldn't store {_named(attachment.name)} on my side; please tell whoever runs me.")
            missed.append(f"{_plain_name(attachment)} (not stored)")
            continue
        # The bytes decide, not the platform's label nor the sender's type (`content_type`): a picture sent as a
        # document or typed application/pdf is shown, and HTML, SVG or text typed image/png is listed as a file,
        # with what it holds, never inlined as an image.
        held = file_contents.content_type(data)
        # An empty file tells nothing (not "binary, not text"): its stated type is said.
        said = file_contents.type_said(attachment.mime_type, held) if data else (
            file_contents.plain(attachment.mime_type or "") or "unknown type")
        if held is not None and held[0] in file_contents.PICTURES:
            otherwise = file_contents.content_type(data, pictures=False)
            images.append(_Picture(path, attachment, said, otherwise, len(files), len(data)))
            continue
        files.append((path, attachment, said))
        if supports_vision and (heif := file_contents.heif(data)):
            # An iPhone's photo sent as a file: listed, it was a path the model could neither be shown nor read
            # (read_file takes text), and the user, told nothing, had an answer about a picture it never saw.
            notes.append(f"I can't see {_named(attachment.name)}: it is {heif} picture, and only PNG, JPEG, GIF"
                         " and WebP pictures reach me; please send it as a JPEG or PNG.")
            missed.append(f"{_plain_name(attachment)} ({heif} picture, which you cannot be shown; only its file is"
                          " saved)")
    body = "\n\n".join(p for p in (text.strip(), *spoken) if p)
    if not (body or images or files):
        return Prepared(None, notes)
    return Prepared(await _content(body, images, files, missed, workspace, supports_vision), notes)


@dataclass(slots=True)
class _Picture:
    """A stored file whose bytes name a picture a vision model takes: shown, unless the decoder refuses it."""

    path: str
    attachment: Attachment
    said: str
    """Its type for the model (`gateway.file_contents.type_said`)."""
    otherwise: tuple[str, str] | None
    """What it holds if it is no picture (`gateway.file_contents.content_type` without pictures): for a document
    the decoder refuses, listed as a file. Not its bytes, which would be held until every picture is decoded."""
    after: int
    """How many files were listed before it: one the decoder refuses, or past the pictures shown, is listed in its
    place, in the order sent."""
    size: int
    """Its bytes, as stored: what it is read up to when decoded."""


def _plain_name(attachment: Attachment) -> str:
    """``attachment``'s name for the model's notes (`gateway.file_contents.plain`)."""
    return file_contents.plain(attachment.name) or "a file with no name"


async def _stored(workspace: Path, folder: str, name: str, data: bytes) -> str:
    """`store` in a worker thread, which a cancel cannot stop midway: a cancel (the turn stopped) waits for
    it, so that when the turn has ended its file is whole or not there, not a temporary file still written."""
    storing = asyncio.ensure_future(asyncio.to_thread(store, workspace, folder, name, data))
    try:
        return await asyncio.shield(storing)
    except asyncio.CancelledError:
        await asyncio.wait((storing,))
        if not storing.cancelled():
            storing.exception()  # a refusal (a full disk) is moot now: the turn was stopped
        raise


async def _transcribe(transcriber: Any, data: bytes, attachment: Attachment, notes: list[str]) -> str | None:
    """The transcript (empty for silence); None when transcribing failed."""
    try:
        transcript = await transcriber.transcribe(data, filename=attachment.name, mime_type=attachment.mime_type)
    except ModelError as exc:
        log.warning("transcribing a voice message failed: %s", _unnamed(exc, attachment.name))
        notes.append("I couldn't transcribe that voice message; please type it instead.")
        return None
    if not transcript:
        notes.append("I couldn't make out any words in that voice message.")
    return transcript


async def _content(body: str, images: list[_Picture], files: list[tuple[str, Attachment, str]], missed: list[str],
                   workspace: Path, supports_vision: bool) -> str | list[dict[str, Any]]:
    shown: str | list[dict[str, Any]] = ""
    missed, files, listed = [*missed], [*files], files
    if images:
        shown, images = await _shown(images, files, listed, missed, workspace, supports_vision)
    parts = [body] if body else []
    if not body and images and not files:
        sent = "an image" if len(images) == 1 else f"{len(images)} images"
        parts.append(f"(The user sent {sent} without a caption.)")
    if relabelled := [f"{_plain_name(p.attachment)} ({p.said})" for p in images
                      if file_contents.relabelled(p.attachment.mime_type)]:
        parts.append("[Pictures the user sent under another type, taken as the pictures they are: "
                     f"{'; '.join(relabelled)}]")
    if files:
        listing = "\n".join(f"- {path} ({said}, {_size(a.size)})" for path, a, said in files)
        parts.append(f"[The user sent these files, saved in the workspace; read them with your file tools:\n{listing}]")
    text = "\n\n".join(parts)
    # The pictures' text, when no picture could be shown (`agent.images.first_turn_content`), follows the
    # message's.
    told, pictures = (shown[0]["text"], shown[1:]) if isinstance(shown, list) else (shown.lstrip("\n"), [])
    text = "\n\n".join(p for p in (text, told) if p)
    content: str | list[dict[str, Any]] = [{"type": "text", "text": text}, *pictures] if pictures else text
    if missed:
        content = with_text(content, f"[Files the user sent that did not reach you: {'; '.join(missed)}]")
    return content


async def _shown(pictures: list[_Picture], files: list[tuple[str, Attachment, str]],
                 listed: list[tuple[str, Attachment, str]], missed: list[str], workspace: Path,
                 supports_vision: bool) -> tuple[str | list[dict[str, Any]], list[_Picture]]:
    """What of ``pictures`` the model is shown (`agent.images.first_turn_content`), at most `MAX_IMAGES`, and the
    pictures it is told of as such. Each is decoded before a word is written, with vision or without: what the
    decoder refuses decides the text. A document that only starts like a picture (a note beginning "GIF89a is…", a
    JPEG cut short sent as a file) was said to be taken as a picture, then did not reach the model, its path never
    listed; to a model without vision it was a picture's path to look at. A picture refused gives its place to the
    next one sent (the first eight sent held them: with a photo cut short among them, seven were shown and a ninth
    listed as a file), up to `MAX_DECODED` decoded in all. Those past are listed as files, where they were sent;
    ``files`` (the files listed, ``listed`` as they were before) and ``missed`` take what is not shown.
    One at a time in the decode threads (`agent._image_fit.run_decoding`): a stop of the turn ends the decoding at
    the next picture, and other chats' pictures are decoded between this one's."""
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    kept: list[_Picture] = []
    usable: list[_Picture] = []
    decoded = 0
    for picture in pictures:
        if len(usable) == MAX_IMAGES or decoded == MAX_DECODED:
            _list_in_place(files, listed, picture, picture.said)
            continue
        decoded += 1
        if supports_vision:
            unusable: list[tuple[str, str]] = []
            shown = await first_turn_content_async("", [picture.path], workspace=workspace, supports_vision=True,
                                                   max_bytes=picture.size, unusable=unusable)
            why = unusable[0][1] if unusable else None
        else:
            # Decoded within the same limits, not fitted: only its path is given, and fitting a 12 MP photo to throw
            # it away took four times the CPU of decoding it alone, holding a decode slot all the while.
            why = await picture_problem_async(picture.path, workspace=workspace, max_bytes=picture.size)
        if why is not None:
            _refused(picture, why, files, listed, missed, kept)
            continue
        usable.append(picture)
        kept.append(picture)
        if not supports_vision:
            continue
        if isinstance(shown, list):
            images.extend(shown[1:])
        elif shown:
            texts.append(shown.lstrip("\n"))
    if usable and not supports_vision:
        unusable = []
        texts.append((await first_turn_content_async("", [p.path for p in usable], workspace=workspace,
                                                     supports_vision=False, unusable=unusable)).lstrip("\n"))
        refused = dict(unusable)
        for picture in usable:  # gone since it was decoded: among the missed, as its place in the list is past
            if (why := refused.get(picture.path)) is not None:
                kept.remove(picture)
                missed.append(f"{_plain_name(picture.attachment)} ({why})")
    text = "\n\n".join(t for t in texts if t)
    return ([{"type": "text", "text": text}, *images] if images else text), kept


def _refused(picture: _Picture, why: str, files: list[tuple[str, Attachment, str]],
             listed: list[tuple[str, Attachment, str]], missed: list[str], kept: list[_Picture]) -> None:
    """``picture``, which the decoder refused for ``why``, among the missed (a photo) or the files (any other)."""
    if picture.otherwise is None and picture.attachment.kind == "image":
        # A photo cut short did not reach the model any more than a failed download.
        kept.append(picture)
        missed.append(f"{_plain_name(picture.attachment)} ({why})")
        return
    # Text that only starts like a picture, or a broken one sent as a file: listed with its path.
    said = (file_contents.type_said(picture.attachment.mime_type, picture.otherwise) if picture.otherwise
            else f"{picture.said}; it {why}")
    _list_in_place(files, listed, picture, said)


def _list_in_place(files: list[tuple[str, Attachment, str]], listed: list[tuple[str, Attachment, str]],
                   picture: _Picture, said: str) -> None:
    """``picture`` listed among ``files`` where it was sent; pictures are listed in the order sent."""
    files.insert(picture.after + len(files) - len(listed), (picture.path, picture.attachment, said))


# -- the turn's side ---------------------------------------------------------------------------

async def turn_input(text: str, event: Inbound, adapter: Adapter | None, *, workspace: Path, folder: str,
                     supports_vision: bool, model: ModelSettings, tell: Callable[[str], None],
                     clock: Clock = SYSTEM_CLOCK,
                     events: GatewayEvents | None = None) -> str | list[dict[str, Any]] | None:
    """The input of a turn whose message is ``text``, from ``event``, which came with files: the
    text, or what the files make of it. Notes about files that could not be taken go to the chat
    first, through ``tell``. None: nothing for the model (the notes were the answer). A message
    without files is its text alone: the turn runner asks nothing here for it. ``clock`` and
    ``events`` are `prepare`'s. A stop of the turn cancels it (`prepare`): no note is told then."""
    if not isinstance(adapter, SupportsDownload):
        tell(f"I can't receive files on {event.platform}.")
        return text or None
    transcriber = await _transcriber(model) if model.transcription.name and any(
        a.kind == "voice" for a in event.attachments) else None
    try:
        prepared = await prepare(adapter, event.platform, event.attachments, text, workspace=workspace, folder=folder,
                                 supports_vision=supports_vision, transcriber=transcriber, clock=clock,
                                 events=events)
    finally:
        if transcriber is not None:
            await transcriber.aclose()
    if prepared.notes:
        tell("\n".join(prepared.notes))
    return prepared.content


async def _transcriber(model: ModelSettings) -> Any:
    # The openai SDK takes a second to import: not on the event loop.
    module = await asyncio.to_thread(importlib.import_module, "agent.models.transcription")
    return module.Transcriber(model)
