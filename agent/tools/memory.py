"""The ``memory`` toolset: notes the agent keeps across sessions.

Notes live in one JSON file, ``ctx.services["memory_path"]``::

    {"version": 1, "next_id": 4, "notes": [{"id": 3, "text": "...", "created_at": "..."}]}

Ids are never reused, so a stale id cannot remove a newer note. Every change is a
read-modify-write under a per-file lock, written whole (`agent._durable.write_whole`),
so concurrent adds lose nothing, a crash leaves either the old or the new file, and a
note reported added is still there after a power cut. The temporary file a crash left
beside it goes with the file's next save, once ten minutes old (`agent._durable.remove_leftovers`).
The lock holds across processes too (`_locked`): two ``switchboard ask`` runs share one file, and
so does one beside a gateway with ``agent.memory_scope: global``. Which file a session uses is its
host's choice: the gateway gives each chat its own (``agent.memory_scope``).

A host that runs a turn again after a crash (the gateway does, under the same turn
id) passes ``ctx.services["note_key"]``, a callable naming the note the calling turn
adds now (by turn and count). A note is kept under its key: the add of a turn run
again finds the note its first run left, and takes this run's words for it, so the
turn leaves one note, as if it had run once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import secrets
import threading
import unicodedata
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agent._durable import fsync_path, remove_leftovers, write_whole
from agent._errors import ToolError
from agent._tools import Tool, ToolContext

log = logging.getLogger(__name__)

MAX_NOTE_CHARS = 2000
MAX_NOTES = 200
MAX_QUERY_CHARS = 1000
"""How long a 'search' query may be: each of its words is looked for in every note, and a query as long
as a model's answer (hundreds of thousands of characters) held a worker thread and its turn for seconds
to find nothing. Ten times what a search for a few words needs."""
MAX_SHOWN_CHARS = 20_000
"""What one 'list' or 'search' shows of the notes, at most: all of them could come to 400,000
characters (`MAX_NOTES` of `MAX_NOTE_CHARS`), which the model would read in every later request
of the conversation. Whole notes, in order; the answer says how many more there are."""

_INVISIBLE = re.compile("[\\s\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0"
                        "\U000e0100-\U000e01ef]")
"""Characters that show nothing besides the control and format ones (Unicode's Cc and Cf: zero-width spaces
and joiners, the BOM, bidi marks, tags): whitespace, variation selectors, Hangul fillers, the blank Braille
pattern: much as `platforms.formatting.blank` counts them for a chat (``agent`` may not import it)."""

_LOCKS = tuple(threading.Lock() for _ in range(64))
"""Striped: a lock per file would be kept for every chat that ever kept a note (the gateway
gives each chat its own file); two files on one stripe merely wait for each other."""


_TEMPORARY = re.compile(r"\.(.+\.json)\.[a-z0-9_]{8}\.tmp")
"""The name `_save` writes a memory file (the group) under until it is complete (as ``tempfile.mkstemp`` named
them)."""


def remove_temporaries(folder: Path, *, below: bool = True) -> list[Path]:
    """Remove the temporary files of memory files in ``folder`` (and the folders below it, with
    ``below``), which a process killed while saving left behind; returns them. A save under way keeps
    its own, in whatever process (a ``switchboard ask`` beside a gateway that starts: it holds no state
    directory lock): see `_remove_unsaved`. Blocking."""
    removed = []
    for directory, folders, names in os.walk(folder):
        temporaries: dict[str, list[Path]] = {}
        for name in names:
            match = _TEMPORARY.fullmatch(name)
            if match and not Path(directory, name).is_dir():
                temporaries.setdefault(match[1], []).append(Path(directory, name))
        for notes, paths in temporaries.items():
            removed += _remove_unsaved(Path(directory, notes), paths)
        if not below:
            folders.clear()
    return removed


def _remove_unsaved(path: Path, temporaries: list[Path]) -> list[Path]:
    """Remove ``temporaries``, of the memory file ``path``, unless a save is writing one; returns those
    removed. A save writes its temporary file only while it holds the file's lock (`_locked`, made as
    there when missing): while the lock can be taken at once, no save is under way, and none starts until
    it is let go of. A lock held elsewhere (or that cannot be made) leaves them all, for the next start.
    Blocking."""
    try:
        fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
    except OSError:
        return []
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a save holds it: one of these is its file, being written
            return []
        removed = []
        for temporary in temporaries:
            with contextlib.suppress(OSError):  # renamed by a save that ended meanwhile, or left for the next start
                temporary.unlink()
                removed.append(temporary)
        return removed
    finally:
        os.close(fd)  # lets go of the flock


def _lock_for(path: Path) -> threading.Lock:
    return _LOCKS[hash(path) % len(_LOCKS)]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the memory file ``path`` for a change (read, changed, saved whole): against this process's
    other threads (`_LOCKS`) and against other processes, with an ``flock`` of ``.<name>.lock``
    beside it, which the system lets go of when its holder dies. Without it, of two processes adding
    at once, the later save drops the note of the earlier, which was reported added.

    A lock file that cannot be made is not waited for: then neither can the temporary file `_save`
    writes beside it, so the change fails there, saying why, and loses nothing. Blocking."""
    with _lock_for(path):
        lock = path.with_name(f".{path.name}.lock")
        with contextlib.suppress(OSError):  # a file where the folder must be: `_load` says so
            _make_folders(path.parent)
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError:
            fd = None
        if fd is None:
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # lets go of the flock


def _make_folders(folder: Path) -> None:
    """Make ``folder`` and the folders above it that are missing, each one's name flushed to disk in
    the folder above it: `write_whole` flushes only the folder the notes file is in, and a power cut
    could take a folder made new for it (the first note of a chat, of a platform), with a note
    reported added. A folder another process made meanwhile is flushed all the same: its note may
    be saved before that process flushes it. Raises OSError when one cannot be made. Blocking."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        with contextlib.suppress(FileExistsError):
            made.mkdir()
        try:
            fsync_path(made.parent)
        except OSError as exc:  # as `write_whole` does: the note is saved, only not yet for good
            log.warning("memory: the new folder %s could not be flushed to disk (%s): a power cut may take it"
                        " and the notes saved in it", made, exc.strerror or exc)


def _memory_path(ctx: ToolContext) -> Path:
    raw = ctx.services.get("memory_path")
    if raw is None:
        raise ToolError("memory is not configured")
    return Path(raw).resolve()


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"version": 1, "next_id": 1, "notes": []}
    except (OSError, ValueError) as exc:
        # Refuse rather than start afresh: overwriting would destroy every note.
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc  # not the host's path
        raise ToolError(f"the memory file cannot be read ({why}); memory is unavailable") from None
    if not isinstance(data, dict) or not isinstance(data.get("notes"), list):
        raise ToolError("the memory file is not in the expected format; memory is unavailable")
    for note in data["notes"]:
        # An id edited by hand to "3" (or 3.0) was listed as note 3, which 'remove' then could not find.
        if isinstance(note, dict) and (whole := _whole(note.get("id"))) is not None:
            note["id"] = whole  # and saved so by the next change
    return data


def _whole(value: Any) -> int | None:
    """``value`` as a whole number, written as a file edited by hand may write one (``3``, ``3.0``, ``"3"``);
    None for anything else (``true``, ``3.5``, ``"three"``, ``null``)."""
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdecimal() and len(value.strip()) < 19:
        return int(value.strip())
    return None


def _save(path: Path, data: dict[str, Any]) -> None:
    """Raises `ToolError` when the file cannot be written (a full disk, a file where its folder
    must be): it is as it was. The model is told the cause, not where the host keeps the file."""
    text = json.dumps(data, ensure_ascii=False, indent=1)
    try:
        _make_folders(path.parent)
        # 0600: the notes are the user's alone, as the state directory is.
        write_whole(path, text.encode("utf-8"), temporary=path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp"),
                    mode=0o600)
    except OSError as exc:
        log.warning("memory: %s cannot be written: %s", path, exc)
        raise ToolError(f"the memory file cannot be written ({exc.strerror or exc}); nothing was changed") from None
    # This file's own only, as named just above: another file's in the folder may be another host's
    # (or chat's) save under way, and those of a gateway's chats go at its start (`remove_temporaries`).
    removed = remove_leftovers(path.parent, re.compile(rf"\.{re.escape(path.name)}\.[0-9a-f]{{8}}\.tmp"))
    if removed:
        log.info("memory: removed %d temporary file(s) beside %s that a crash left before their rename", removed, path)


def _readable(notes: list[Any], path: Path) -> tuple[list[dict[str, Any]], str]:
    """The notes `list` and `search` can show: objects with a whole-number ``id`` (as `_load` reads it, so that
    'remove' finds each note shown) and a ``text``. Any other (a file edited by hand) is skipped, not a KeyError
    for every list and search: it stays in the file (a change saves it as it was), a warning names the file for
    the operator, and the answer's last line counts it (the second value; empty when there is none), so the user
    hears that some notes are not shown."""
    readable = [n for n in notes if isinstance(n, dict) and type(n.get("id")) is int and "text" in n]
    skipped = len(notes) - len(readable)
    if not skipped:
        return readable, ""
    log.warning("memory: %s holds %d note(s) without a whole-number 'id' or a 'text' (edited by hand?): they are"
                " not shown until the file is fixed", path, skipped)
    return readable, (f"\n({skipped} note(s) in the memory file cannot be shown: each lacks a whole-number 'id' or "
                      "a 'text'; the operator can fix the file by hand)")


def _format(notes: list[dict[str, Any]], *, more: str) -> str:
    """A note a line, ``[id] text``; a note's further lines indented, so that no text a note holds
    (``[1] …`` on a line of its own) reads as another note. Past `MAX_SHOWN_CHARS`, the notes left
    are counted instead, on a last line ending with ``more``: what to do to see them.

    A note longer than `MAX_NOTE_CHARS` (a file edited by hand) is shown cut there, saying so: whole,
    one past `MAX_SHOWN_CHARS` was shown as none, hiding its id and every note after it."""
    lines, size = [], 0
    for shown, note in enumerate(notes):
        text = str(note["text"])
        if len(text) > MAX_NOTE_CHARS:
            text = (f"{text[:MAX_NOTE_CHARS]}… (cut short: this note has {len(text)} characters, more than the "
                    f"{MAX_NOTE_CHARS} a note may have; the file was edited by hand?)")
        line = f"[{note['id']}] " + "\n    ".join(text.splitlines())
        size += len(line) + 1
        if size > MAX_SHOWN_CHARS:
            lines.append(f"({len(notes) - shown} more not shown: an answer shows at most {MAX_SHOWN_CHARS} "
                         f"characters of notes; {more})")
            break
        lines.append(line)
    return "\n".join(lines)


def _add(path: Path, args: dict[str, Any], ctx: ToolContext) -> str:
    text = (args.get("text") or "").strip()
    if not text:
        raise ToolError("action 'add' needs a non-empty 'text'")
    if len(text) > MAX_NOTE_CHARS:
        raise ToolError(f"the note has {len(text)} characters; a note may have at most {MAX_NOTE_CHARS}")
    if all(unicodedata.category(char) in ("Cc", "Cf") or _INVISIBLE.match(char) for char in text):
        # Listed as "[4] " and found by no search: a note no one can read, taking one of the places.
        raise ToolError("the note shows nothing: it holds only whitespace and invisible characters (zero-width "
                        "spaces, byte order marks, other format characters); nothing was added")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # JSON's "\ud83d" alone (half an emoji): saved, the whole file would fail
        raise ToolError(f"the note holds a lone surrogate (half of a UTF-16 pair, at character {exc.start + 1}), "
                        "which is no UTF-8 text; nothing was added") from None
    note_key = ctx.services.get("note_key")
    key = note_key() if note_key is not None else None
    with _locked(path):
        data = _load(path)
        left = next((n for n in data["notes"] if key is not None and isinstance(n, dict) and n.get("key") == key),
                    None)
        if left is not None:
            left["text"] = text
            _save(path, data)
            return f"added note {left['id']}"
        held = len(data["notes"])
        if held > MAX_NOTES:  # a file edited by hand: "remove a note" would be refused again, as many times
            raise ToolError(f"memory is full ({held} notes, more than the {MAX_NOTES} it may hold: the file was edited "
                            f"by hand?); remove {held - MAX_NOTES + 1} notes before adding another")
        if held == MAX_NOTES:
            raise ToolError(f"memory is full ({MAX_NOTES} notes); remove a note before adding another")
        note_id = _next_id(data, path)
        created = datetime.now(timezone.utc).isoformat(timespec="seconds")
        data["notes"].append({"id": note_id, "text": text, "created_at": created, **({"key": key} if key else {})})
        data["next_id"] = note_id + 1
        _save(path, data)
    return f"added note {note_id}"


def _next_id(data: dict[str, Any], path: Path) -> int:
    """The id a new note takes: ``next_id``, yet always past every id a note holds. A ``next_id`` edited by hand
    to one that is not a whole number was a ValueError (or TypeError) naming neither the file nor the key, for every
    add; one lowered gave a new note the id of one kept, which a 'remove' of either then took both of. Either
    is logged, naming the file, and the next note takes the id past the highest held; the add saves the mended
    ``next_id``, so the warning comes once."""
    raw = data.get("next_id", 1)
    held = [n["id"] for n in data["notes"] if isinstance(n, dict) and type(n.get("id")) is int]
    past = max(held, default=0) + 1
    if (whole := _whole(raw)) is None:
        log.warning("memory: %s has a 'next_id' that is not a whole number (%.40r; edited by hand?): the next note "
                    "takes %d, past the highest id a note holds", path, raw, past)
        return past
    if whole < past:
        log.warning("memory: %s has 'next_id' %d, not past the highest id a note holds (edited by hand?): the next "
                    "note takes %d, so that no two notes share an id", path, whole, past)
        return past
    return whole


def _remove(path: Path, args: dict[str, Any]) -> str:
    if "id" not in args:
        raise ToolError("action 'remove' needs the 'id' of a note (see action 'list')")
    note_id = int(args["id"])  # the schema's "integer" lets 2.0 through, which "removed note 2.0" would print
    with _locked(path):
        data = _load(path)
        # Whole-number ids only, as 'list' shows them: an id ``true`` (edited by hand) equals 1 in Python.
        kept = [n for n in data["notes"]
                if not (isinstance(n, dict) and type(n.get("id")) is int and n["id"] == note_id)]
        if len(kept) == len(data["notes"]):
            raise ToolError(f"there is no note {note_id}")
        data["notes"] = kept
        _save(path, data)
    return f"removed note {note_id}"


def _search(path: Path, args: dict[str, Any]) -> str:
    query = (args.get("query") or "").strip()
    if len(query) > MAX_QUERY_CHARS:
        raise ToolError(f"the query has {len(query)} characters; a search query may have at most {MAX_QUERY_CHARS}")
    words = set(query.casefold().split())
    if not words:
        raise ToolError("action 'search' needs a non-empty 'query'")
    with _lock_for(path):
        notes, skipped = _readable(_load(path)["notes"], path)
    folded = ((n, str(n["text"]).casefold()) for n in notes)  # once a note, not once a word and note
    hits = [n for n, text in folded if all(w in text for w in words)]
    return (_format(hits, more="add words to the query to narrow it") if hits else "(no matching notes)") + skipped


def memory(args: dict[str, Any], ctx: ToolContext) -> str:
    path = _memory_path(ctx)
    action = args["action"]
    if action == "add":
        return _add(path, args, ctx)
    if action == "remove":
        return _remove(path, args)
    if action == "search":
        return _search(path, args)
    with _lock_for(path):
        notes, skipped = _readable(_load(path)["notes"], path)
    return (_format(notes, more="action 'search' finds notes by their words") if notes else "(no notes)") + skipped


def memory_toolset() -> tuple[Tool, ...]:
    """The ``memory`` tool."""
    parameters = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["add", "list", "remove", "search"]},
            "text": {"type": "string", "description": "The note to add (action 'add')."},
            "id": {"type": "integer", "description": "The note to remove (action 'remove')."},
            "query": {"type": "string", "description": "Words that must all occur in a note (action 'search')."},
        },
        "required": ["action"],
        "additionalProperties": False,
    }
    description = (
        "Persistent notes that survive across conversations: facts about the user, their preferences, "
        "decisions worth remembering. 'add' stores a note, 'list' shows the notes with their ids (as many as "
        f"fit in {MAX_SHOWN_CHARS} characters), "
        "'remove' deletes one by id, 'search' finds notes containing all the query words "
        f"(case-insensitive, at most {MAX_QUERY_CHARS} characters). At most {MAX_NOTES} notes of "
        f"{MAX_NOTE_CHARS} characters each."
    )
    return (Tool("memory", description, parameters, memory, "memory"),)
