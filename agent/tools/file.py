"""The ``file`` toolset: read, list and write files inside the session's workspace.

Every path goes through `resolve_in_workspace`, which resolves symlinks before
checking containment, so neither ``..``, an absolute path nor a symlink can reach
outside the workspace; then through the session's `FileScope` (the ``file_scope``
service), if it has one, so none reaches another person's files either. What passed is
opened with `open_unfollowed` and checked again on the open descriptor, so a symlink or a
FIFO put on the path after the check is refused, not followed or waited on. `write_file` writes
a new file beside the old one, in the folder so opened, and renames it over the old one once
whole, flushed to disk before the rename and its folder after (as `agent._durable.write_whole`): a
disk that refuses the write (full) leaves the old file as it was, not cut short, and a file reported
written is still there, whole, after a power cut. What a crash between the two left under its
temporary name is removed by a later write to that folder. One write may hold `MAX_WRITE_BYTES`, and one
turn's writes `MAX_TURN_WRITE_BYTES`: a model writing in a loop cannot fill the disk the state database is on.
Handlers are plain functions: the registry runs them in a worker thread, so file I/O never blocks
the event loop.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import itertools
import json
import logging
import os
import re
import stat
import unicodedata
import uuid
from pathlib import Path
from typing import Any

from agent._durable import remove_leftovers
from agent._errors import ToolError
from agent._tools import Tool, ToolContext
from agent.tools._glob import GlobMatch
from agent.tools._open_unfollowed import READ, is_swapped, open_folder, open_unfollowed
from agent.tools._per_turn import TurnBudget
from agent.tools.file_scope import SERVICE as FILE_SCOPE
from agent.tools.file_scope import FileScope

#: Characters `read_file` returns at most; the model is told how to read on.
MAX_READ_CHARS = 100_000
#: Entries `list_files` returns at most.
MAX_LIST_ENTRIES = 1000
#: Entries `list_files` looks at at most, matching or not: a pattern few match (``**/*.xyz``) over a
#: tree of millions (``node_modules``) walked it all, seconds to minutes of a worker thread that no
#: interrupt stops, and a few such calls took every thread the host has for its blocking work.
MAX_WALK_ENTRIES = 100_000
#: Bytes (UTF-8) one `write_file` may write: far more than one answer of a model holds.
MAX_WRITE_BYTES = 10_000_000
#: Bytes one turn's `write_file` calls may write together. Unbounded, a model calling it in a loop (up to
#: 64 calls an answer, 90 answers a turn) wrote gigabytes, and the disk full then failed every chat's turn.
MAX_TURN_WRITE_BYTES = 100_000_000
# Enough of a file's head to tell text from binary data without reading it all.
_SNIFF_BYTES = 8192
# Text that is no UTF-8 but says what it is, by its first bytes: UTF-16 (Windows PowerShell's `>`, Excel's
# "Unicode text") is half NUL bytes, and was refused as binary. UTF-32's marks first: they begin as UTF-16's.
_MARKED = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
           (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
# Control characters, and the line and paragraph separators (U+2028, U+2029) that end a line as a newline does.
_UNSHOWN = frozenset({"Cc", "Zl", "Zp"})
# write_file's temporary names, exactly: nothing else is ever taken for one of them.
_TEMPORARY = re.compile(r"\.write_file\.[0-9a-f]{32}\.part")

log = logging.getLogger("agent.tools.file")
_WRITTEN = TurnBudget(MAX_TURN_WRITE_BYTES)


def resolve_in_workspace(workspace: Path, path: str) -> Path:
    """The absolute, symlink-free path ``path`` names inside ``workspace``.

    Relative paths are taken from the workspace; absolute ones must already lie
    inside it. The result may not exist yet. Raises `ToolError` when the resolved
    path is outside the workspace (or is not a usable path at all). The check is by
    path: open the result with `open_unfollowed`, which refuses a symlink swapped in
    since, and check what was opened on its descriptor.
    """
    root = workspace.resolve()
    try:
        target = (root / path).resolve()
        if target != root and root not in target.parents:
            raise ToolError(f"{path!r} is outside the workspace")
        # resolve() lets an over-long name through; only the first system call on it says so.
        target.exists()
    except RuntimeError:  # how Python 3.11's resolve() reports a symlink loop
        raise ToolError(f"{path!r} is not a usable path: a symlink loop") from None
    except (OSError, ValueError) as exc:  # NUL bytes, over-long names; strerror leaves out the absolute path
        raise ToolError(f"{path!r} is not a usable path: {getattr(exc, 'strerror', None) or exc}") from None
    return target


def _resolve(ctx: ToolContext, path: str, *, writing: bool = False) -> Path:
    """`resolve_in_workspace`, then refused when the session's `FileScope` says it is someone
    else's (or, ``writing``, the place of a folder it keeps)."""
    target = resolve_in_workspace(ctx.workspace, path)
    scope: FileScope | None = ctx.services.get(FILE_SCOPE)
    if scope is not None:
        (scope.check_write if writing else scope.check)(target, ctx.workspace.resolve(), path)
    return target


def _open(target: Path, path: str, flags: int, verb: str) -> tuple[int, os.stat_result]:
    """``target`` (checked by `_resolve`) opened with `open_unfollowed`, so that a file swapped for a
    symlink since, or a folder on its way, is refused rather than followed out of the workspace, and
    a FIFO neither blocks the worker thread for ever nor is used; with what it is, by its descriptor.
    Raises `ToolError`."""
    try:
        fd = open_unfollowed(target, flags)
    except OSError as exc:
        raise _unopened(exc, path, verb) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = "is a directory; use list_files" if stat.S_ISDIR(info.st_mode) else "is not a regular file"
        raise ToolError(f"{path!r} {kind}")
    return fd, info


def _unopened(exc: OSError, path: str, verb: str) -> ToolError:
    """What the model is told of ``path`` that could not be opened (or its folder)."""
    if isinstance(exc, FileNotFoundError):
        return ToolError(f"{path!r} does not exist")
    if isinstance(exc, IsADirectoryError):
        return ToolError(f"{path!r} is a directory")
    if is_swapped(exc):
        return ToolError(f"{path!r} changed after it was checked: a symlink is now where a folder or the file "
                         f"was, and {verb}_file follows none")
    return ToolError(f"cannot {verb} {path!r}: {exc.strerror or exc}")


def _capped_lines(f, cap: int):
    """Lines of ``f``, each cut to ``cap`` characters so one huge line never fills memory. The rest
    of a line cut short is skipped only when the next line is asked for: read first, it made showing
    the start of a file that is one line of gigabytes (minified JSON, a log without newlines) read it all."""
    while line := f.readline(cap):
        yield line
        if len(line) == cap and not line.endswith("\n"):
            # The rest of an over-long line could never be shown; skip it.
            while (rest := f.readline(cap)) and len(rest) == cap and not rest.endswith("\n"):
                pass


def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    # A file with other hard links is read: one may be outside the workspace, but reading changes
    # nothing, and only someone who may read and write the file already can make one (Linux's
    # protected_hardlinks); refusing would refuse the user's own (pnpm's node_modules, cp -al copies).
    fd, _ = _open(_resolve(ctx, args["path"]), args["path"], READ, "read")
    # int(): the schema's "integer" lets 2.0 through, which the notes below would print as "lines 2.0-…".
    offset, limit = int(args.get("offset", 1)), None if args.get("limit") is None else int(args["limit"])
    try:
        with os.fdopen(fd, "rb") as raw:
            head = raw.read(_SNIFF_BYTES)
            encoding = next((name for mark, name in _MARKED if head.startswith(mark)), None)
            if encoding is None and b"\0" in head:
                raise ToolError(f"{args['path']!r} looks like a binary file; read_file returns text only")
            raw.seek(0)
            f = io.TextIOWrapper(raw, encoding=encoding or "utf-8", errors="replace")
            lines: list[str] = []
            used, last, note, n = 0, offset - 1, "", 0
            for n, line in enumerate(_capped_lines(f, MAX_READ_CHARS + 1), start=1):
                if n < offset:
                    continue
                if limit is not None and n >= offset + limit:
                    break
                if used + len(line) > MAX_READ_CHARS:
                    if lines:
                        note = (
                            f"[truncated at {MAX_READ_CHARS} characters: lines {offset}-{last} shown; "
                            f"read on with offset={last + 1}]"
                        )
                    else:
                        lines.append(line[:MAX_READ_CHARS])
                        note = (
                            f"[truncated: line {n} is longer than {MAX_READ_CHARS} characters; only its start is shown]"
                        )
                    break
                lines.append(line)
                used, last = used + len(line), n
    except OSError as exc:
        raise ToolError(f"cannot read {args['path']!r}: {exc.strerror or exc}") from None
    if not lines and offset > max(n, 1):
        return f"[the file has {n} lines; offset {offset} is past the end]"
    text = "".join(lines)
    if note:
        text += ("" if text.endswith("\n") else "\n") + note
    return text


# A folder below the listed one is opened through the one above it as a folder only, following no
# symlink: one swapped since the scan that found it for a symlink (out of the workspace) or a FIFO
# (whose open waits for a writer for ever) is not entered. os.fwalk opens it plainly, and recurses, so
# that a tree some thousand folders deep, which write_file alone can make, failed the listing too.
_SUBFOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class _Walk:
    """How many more entries a walk may look at (`MAX_WALK_ENTRIES`), and whether it stopped for that."""

    def __init__(self) -> None:
        self.left = MAX_WALK_ENTRIES
        self.stopped = False


def _matches(base: Path, folder: int, matches: GlobMatch, hidden, walk: _Walk):
    """Entries under ``base`` (open as ``folder``) whose relative path matches and that are not
    ``hidden``, directory by directory in name order (depth first), each with its mark ('/' a
    directory, '@' a symlink); once it has looked at ``walk.left`` entries, no more (``walk.stopped``).
    Open are only the folders on the way to the one being read."""
    todo: list[tuple[Path, int]] = []  # folders still to read (relative to base), each with the folder it is in
    left: dict[int, int] = {}  # an open folder: how many of its folders in `todo` are still to be opened
    here, fd = Path(), folder
    try:
        while fd is not None:
            subfolders = []
            entries = _entries(fd, walk.left + 1)
            walk.stopped = len(entries) > walk.left
            entries = entries[:walk.left]
            walk.left -= len(entries)
            for name, mark in entries:
                entry = here / name
                if hidden(base / entry):
                    continue
                if matches(entry.as_posix()):
                    yield base / entry, mark
                if mark == "/" and (matches.depth is None or len(entry.parts) < matches.depth):
                    subfolders.append(name)
            if walk.stopped:
                return
            todo.extend((here / name, fd) for name in reversed(subfolders))
            left[fd] = len(subfolders)
            _release(fd, left, folder)
            fd = None
            while fd is None and todo:
                here, parent = todo.pop()
                try:
                    fd = os.open(here.name, _SUBFOLDER, dir_fd=parent)
                except OSError:  # gone, or no folder now
                    pass
                left[parent] -= 1
                _release(parent, left, folder)
    finally:
        for open_fd in left:
            if open_fd != folder:
                os.close(open_fd)
        if fd is not None and fd != folder:
            os.close(fd)


def _release(fd: int, left: dict[int, int], folder: int) -> None:
    """Close ``fd`` once none of its folders is still to be opened (``folder`` is the caller's)."""
    if left[fd] == 0:
        del left[fd]
        if fd != folder:
            os.close(fd)


def _entries(folder: int, most: int) -> list[tuple[str, str]]:
    """The first ``most`` names read from ``folder`` (a folder of millions is not read whole), in order,
    each with its mark; none when it cannot be read."""
    try:
        with os.scandir(folder) as listing:
            found = [(entry.name, _mark(entry)) for entry in itertools.islice(listing, most)]
    except OSError:
        return []
    return sorted(found)


def _mark(entry: os.DirEntry) -> str:
    try:
        return "@" if entry.is_symlink() else "/" if entry.is_dir(follow_symlinks=False) else ""
    except OSError:  # gone meanwhile
        return ""


def list_files(args: dict[str, Any], ctx: ToolContext) -> str:
    path = args.get("path", ".")
    base = _resolve(ctx, path)
    try:
        folder = open_unfollowed(base, READ | os.O_DIRECTORY)
    except OSError as exc:
        if is_swapped(exc):
            raise ToolError(f"{path!r} changed after it was checked: a symlink is now where a folder was, "
                            "and list_files follows none") from None
        if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
            raise ToolError(f"{path!r} is not a directory") from None
        raise ToolError(f"cannot list {path!r}: {exc.strerror or exc}") from None
    matches = GlobMatch(args.get("pattern") or "*")
    root = ctx.workspace.resolve()
    scope: FileScope | None = ctx.services.get(FILE_SCOPE)
    hidden = scope.hidden_in(root) if scope is not None else (lambda entry: False)
    walk = _Walk()
    try:
        found = [
            (entry.relative_to(root).as_posix(), mark)
            for entry, mark in itertools.islice(_matches(base, folder, matches, hidden, walk), MAX_LIST_ENTRIES + 1)
        ]
    finally:
        os.close(folder)
    shown = [_listed(path) + mark for path, mark in sorted(found[:MAX_LIST_ENTRIES])] or ["(no matching entries)"]
    if len(found) > MAX_LIST_ENTRIES:
        shown.append(f"[listing truncated: first {MAX_LIST_ENTRIES} entries shown; narrow the path or pattern]")
    elif walk.stopped:
        shown.append(f"[listing stopped after looking at {MAX_WALK_ENTRIES} entries: the tree is too large to "
                     "search whole, and entries further on are not shown; narrow the path or pattern]")
    return "\n".join(shown)


def _listed(path: str) -> str:
    """``path`` as a listing shows it: as it is, or, when it holds a character that ends a line or
    is none to see (a control character), as a JSON string (``"a\\nb.txt"``), which the model's
    arguments name back as written. Shown as it is, a name holding a newline read as two entries, or
    as the listing's own note (``x\\n[listing truncated: …]``): whoever could name a file in the
    workspace could tell the model what is in it. One that begins with ``"`` is shown so too, so that
    a listed entry in quotes is always such a string, never a name of quotes and backslashes."""
    if not path.startswith('"') and not any(unicodedata.category(char) in _UNSHOWN for char in path):
        return path
    # json.dumps escapes only what JSON must (below U+0020): DEL, C1 controls and U+2028 it writes as they are.
    return "".join(f"\\u{ord(char):04x}" if unicodedata.category(char) in _UNSHOWN else char
                   for char in json.dumps(path, ensure_ascii=False))


def write_file(args: dict[str, Any], ctx: ToolContext) -> str:
    path, content = args["path"], args["content"]
    size = len(content.encode("utf-8", "surrogatepass"))
    if size > MAX_WRITE_BYTES:
        raise ToolError(f"cannot write {path!r}: the content is {size:,} bytes (UTF-8), more than the "
                        f"{MAX_WRITE_BYTES:,} one write_file may write; nothing was written, the file is as it was. "
                        "Split it over several files")
    target = _resolve(ctx, path, writing=True)
    if not _WRITTEN.take(ctx, size):
        raise ToolError(f"cannot write {path!r}: this turn has written {_WRITTEN.used(ctx):,} bytes with write_file, "
                        f"and {size:,} more would pass the {_WRITTEN.most:,} one turn may write; nothing was written, "
                        "the file is as it was. Say what is left to write in your final answer")
    try:
        _write_at(target, path, content)
    except BaseException:  # nothing was written: it does not count
        _WRITTEN.give_back(ctx, size)
        raise
    return f"wrote {len(content)} characters to {target.relative_to(ctx.workspace.resolve()).as_posix()}"


def _write_at(target: Path, path: str, content: str) -> None:
    try:
        folder = open_folder(target, make_folders=True)
    except OSError as exc:
        raise _unopened(exc, path, "write") from None
    try:
        _write_whole(folder, target.name, content, _replaced(folder, target.name, path), path)
        _remove_leftovers(folder, path)
    finally:
        os.close(folder)


def _replaced(folder: int, name: str, path: str) -> os.stat_result | None:
    """The file ``name`` in ``folder`` that writing replaces; None when there is none. Raises
    `ToolError` when it is not a file to replace."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            return None
        raise _unopened(exc, path, "write") from None
    if stat.S_ISLNK(info.st_mode):  # the path was resolved: a symlink there now was put there since
        raise _unopened(OSError(errno.ELOOP, "a symlink"), path, "write")
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{path!r} is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{path!r} is not a regular file")
    if not os.access(name, os.W_OK, dir_fd=folder, follow_symlinks=False):
        # Renamed over, a file made read-only (chmod a-w) would change all the same: only the folder's
        # permissions are asked. It stays as its owner made it, as opening it to write kept it.
        raise ToolError(f"cannot write {path!r}: {os.strerror(errno.EACCES)}")
    if info.st_nlink > 1:  # replaced, it would part from its other names (one perhaps outside), which keep the old text
        raise ToolError(f"{path!r} has {info.st_nlink} hard links, names of one file, and one may be outside "
                        "the workspace; nothing was written. Write to a new path instead")
    return info


def _write_whole(folder: int, name: str, content: str, replaced: os.stat_result | None, path: str) -> None:
    """``content`` as the file ``name`` in ``folder``, with the owner, group and permissions of
    the file it ``replaced`` (None: a new file's): written under a temporary name, then renamed
    over ``name`` once whole."""
    temporary = f".write_file.{uuid.uuid4().hex}.part"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666,
                     dir_fd=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                if replaced is not None:
                    _keep_owner(f.fileno(), replaced)  # first: a new owner clears the setuid and setgid bits
                    os.fchmod(f.fileno(), stat.S_IMODE(replaced.st_mode))
                f.write(content)
                # Flushed before the rename: else the rename may reach the disk before the text does, and
                # a power cut leaves the file empty, its old text lost too, though the model was told "wrote".
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)
            raise
    except OSError as exc:
        raise ToolError(f"cannot write {path!r}: {exc.strerror or exc}; nothing was written, the file is as it "
                        "was") from None
    except UnicodeEncodeError as exc:  # JSON's "\ud83d" alone (half an emoji) is a str, but no UTF-8
        raise ToolError(f"cannot write {path!r}: the content holds a lone surrogate (half of a UTF-16 pair, at "
                        f"character {exc.start + 1}), which is no UTF-8 text; nothing was written, the file is as it "
                        "was") from None
    _flush_folder(folder, path)


def _flush_folder(folder: int, path: str) -> None:
    """Flush ``folder`` (open ``O_PATH``, which cannot be flushed itself), so that the rename lasts
    too. The file is in place: a folder that cannot be flushed (some file systems flush none) is
    logged, not raised, as raised it would tell the model nothing was written of a file that was."""
    try:
        fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=folder)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        # The path at DEBUG only: it is the model's word (often a user's), and the log is the operator's.
        log.warning("write_file: a file is written, but its folder could not be flushed to disk (%s): a power cut "
                    "may bring back what it held before", exc.strerror or exc)
        log.debug("write_file: the file whose folder could not be flushed: %r", path)


def _remove_leftovers(folder: int, path: str) -> None:
    """Remove from ``folder`` what a crash left under `_write_whole`'s temporary names (see
    `remove_leftovers`). Each holds a whole or partial copy of text the model wrote that never
    reached its file; the file is as it was."""
    removed = remove_leftovers(folder, _TEMPORARY)
    if removed:
        # The path at DEBUG only: it is the model's word (often a user's), and the log is the operator's.
        log.info("write_file: removed %d temporary file(s) a crash left before their rename", removed)
        log.debug("write_file: the temporary files removed were beside %r", path)


def _keep_owner(fd: int, replaced: os.stat_result) -> None:
    """Give the new file the owner and group of the one it replaces: a gateway running as root (a
    container) would otherwise take a user's file from them. A writer that may not (not root, or
    root of a user namespace that does not map that owner) leaves it its own, as it always did."""
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) == (replaced.st_uid, replaced.st_gid):
        return
    try:
        os.fchown(fd, replaced.st_uid, replaced.st_gid)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EINVAL):
            raise


_PATH = {"type": "string", "description": "Path relative to the workspace (absolute paths must lie inside it)."}


def file_toolset() -> tuple[Tool, ...]:
    """The ``file`` tools: read_file, list_files, write_file."""
    return (
        Tool(
            "read_file",
            "Read a text file (UTF-8, or UTF-16 with its byte-order mark) from the workspace. Returns at most "
            f"{MAX_READ_CHARS} characters; a truncation note then says which offset to read on from.",
            {
                "type": "object",
                "properties": {
                    "path": _PATH,
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Most lines to return."},
                },
                "required": ["path"],
                "additionalProperties": False,
            },
            read_file,
            "file",
        ),
        Tool(
            "list_files",
            "List entries under a workspace directory, paths relative to the workspace. Directories end "
            "in '/', symlinks in '@' (not followed). 'pattern' is a glob relative to 'path': '*' and '?' "
            f"stay within one directory, '**' spans directories (e.g. '**/*.py'). At most {MAX_LIST_ENTRIES} entries. "
            "A name holding a control character (a newline) is shown as a JSON string: pass it back as shown.",
            {
                "type": "object",
                "properties": {
                    "path": {**_PATH, "default": "."},
                    "pattern": {"type": "string", "description": "Glob such as '*.md' or '**/*.py'."},
                },
                "additionalProperties": False,
            },
            list_files,
            "file",
        ),
        Tool(
            "write_file",
            "Write text to a workspace file, replacing it if it exists; missing parent directories are created. "
            f"At most {MAX_WRITE_BYTES:,} bytes (UTF-8) a call, {MAX_TURN_WRITE_BYTES:,} a turn.",
            {
                "type": "object",
                "properties": {"path": _PATH, "content": {"type": "string"}},
                "required": ["path", "content"],
                "additionalProperties": False,
            },
            write_file,
            "file",
        ),
    )
