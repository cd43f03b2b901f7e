"""``send_file``: send a workspace file to the user's chat (in the ``file`` toolset).

The host supplies ``ctx.services["send_file"]``, an async callable ``(FileToSend) -> str``
whose answer (a delivery note) the model reads; without it the tool refuses. A chat may
send only what its own file tools may read: the path goes through the same checks as
``read_file`` (inside the workspace, symlinks resolved, within the session's
``file_scope``) before the host sees it. The host opens it with `open_to_send`, which checks
what only the host knows — the platform's size limit — on the open file, and refuses a missing,
empty, special or hard-linked file, or a symlink put on the path since it was checked. One turn
sends at most `MAX_FILES_PER_TURN` (`agent.tools._per_turn`); a call the host refuses with a
`ToolError` (nothing sent) does not count.
"""

from __future__ import annotations

import asyncio
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from agent._errors import ToolError
from agent._tools import Tool, ToolContext
from agent.tools._open_unfollowed import is_swapped, open_unfollowed
from agent.tools._per_turn import TurnBudget
from agent.tools.file import _resolve

SERVICE = "send_file"
NOT_AVAILABLE = "Sending files is not available in this session."
MAX_FILES_PER_TURN = 20
"""Files one turn may send: each is copied into the host's state directory and sent at once, and a
model in a loop could send the same report over and over, up to thousands of copies of it."""
TOO_MANY = (f"This turn has sent {MAX_FILES_PER_TURN} files already, the most one turn may send; nothing was "
            "sent. Tell the user where the other files are in the workspace, or send them together as one archive.")
_BUDGET = TurnBudget(MAX_FILES_PER_TURN)


@dataclass(frozen=True, slots=True)
class FileToSend:
    """What the tool hands the host."""

    path: Path
    """Absolute and symlink-free, inside the workspace and the session's scope when it was
    checked; it may have gone or changed by the time the host opens it (`open_to_send`)."""
    shown: str
    """The path as the model wrote it, for errors it reads."""
    caption: str | None
    """Markdown to show with the file; None for none."""


def human_size(n: int) -> str:
    """Decimal units, as the platforms state their limits (Telegram's 50 MB is 50,000,000 bytes)."""
    for unit, scale in (("GB", 1000**3), ("MB", 1000**2), ("KB", 1000)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def open_to_send(file: FileToSend, limit: int, where: str) -> tuple[BinaryIO, int]:
    """``file`` open for reading, and its size in bytes; `ToolError` naming the path (and the limit
    of ``where``, the platform) when it is missing, not a regular file, linked elsewhere, empty, or
    over ``limit`` bytes. Blocking; the caller closes the file.

    The path was checked when it was resolved, but by path: a file swapped afterwards for a
    symlink to ``/etc/…``, a FIFO (whose reading never ends) or a device would be read all the
    same. So the checks are made on the descriptor opened here (`open_unfollowed`), and what is
    read is that descriptor; and a file with other hard links is refused, as
    one of its links may be outside the workspace (``ln ../config.yaml notes.txt``), which no
    check of the path can see. One whose every name is inside is refused too, since telling the
    two apart would take a search of the disk: the file tools and attachments never make hard
    links, and the model can send a copy.
    """
    try:
        fd = open_unfollowed(file.path)
    except FileNotFoundError:
        raise ToolError(f"{file.shown!r} does not exist; nothing was sent") from None
    except OSError as exc:
        if is_swapped(exc):
            raise ToolError(f"{file.shown!r} changed after it was checked: a symlink (or a file) is now where a "
                            "folder or the file was, and send_file follows none; nothing was sent") from None
        raise ToolError(f"cannot read {file.shown!r}: {exc.strerror or exc}; nothing was sent") from None
    try:
        size = _size(os.fstat(fd), file, limit, where)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb"), size


def _size(info: os.stat_result, file: FileToSend, limit: int, where: str) -> int:
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{file.shown!r} is a directory; send_file sends one file, so nothing was sent")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{file.shown!r} is not a regular file; nothing was sent")
    if info.st_nlink > 1:
        raise ToolError(f"{file.shown!r} has {info.st_nlink} hard links, names of one file, and one may be outside "
                        "the workspace; nothing was sent. Send a copy of it instead")
    if info.st_size == 0:
        raise ToolError(f"{file.shown!r} is empty (0 bytes); an empty file cannot be sent, so nothing was sent")
    if info.st_size > limit:
        size, most = human_size(info.st_size), human_size(limit)
        if size == most:  # just over: the rounded sizes alone would read alike
            size, most = f"{info.st_size:,} bytes", f"{limit:,} bytes"
        raise ToolError(f"{file.shown!r} is {size}, larger than the {most} a file sent on {where} may be; "
                        "nothing was sent")
    return info.st_size


async def send_file(args: dict[str, Any], ctx: ToolContext) -> str:
    send = ctx.services.get(SERVICE)
    if send is None:
        raise ToolError(NOT_AVAILABLE)
    target = await asyncio.to_thread(_resolve, ctx, args["path"])
    caption = args.get("caption")
    caption = caption if caption and not caption.isspace() else None
    if not _BUDGET.take(ctx):
        raise ToolError(TOO_MANY)
    try:
        return str(await send(FileToSend(target, args["path"], caption)))
    except ToolError:  # the host's word that nothing was sent (too large, a stopped turn)
        _BUDGET.give_back(ctx)
        raise


def send_file_toolset() -> tuple[Tool, ...]:
    """The ``send_file`` tool, in the ``file`` toolset."""
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1,
                     "description": "Path relative to the workspace (absolute paths must lie inside it)."},
            "caption": {"type": "string", "description": "Text shown with the file (Markdown)."},
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    description = (
        "Send a workspace file to the user's chat as a file they can download (a report, a CSV, a chart "
        "you wrote). It goes out in order with your messages; the answer says whether it was queued. At most "
        f"{MAX_FILES_PER_TURN} files a turn."
    )
    return (Tool("send_file", description, parameters, send_file, "file"),)
