"""The terminal chat's input from a pipe, a file, or a terminal without line editing: what arrived together.

Lines that arrive together are one message (``printf 'Compare these:\\n- apples\\n- pears\\n' |
switchboard chat``: a list to delegate). Whether they did is decided by what can be read when the
reader looks, not by a window counted from the first line: the reader thread of a loaded machine
may be scheduled long after the lines arrived, and such a window split a pasted list in two. A read
takes everything readable then (up to the end of a line it stops inside: a paste bigger than the
pipe's buffer arrives in pieces cut anywhere), so lines written later, once their reader has
looked (and waited `LINE_GRACE`, below), are a message of their own, and so is each line typed at
a terminal (its driver hands over a line at a time, and says one is readable only once it is whole).

The descriptor is read directly, not through the stream's ``readline``: a text stream may
already hold the next lines in its buffer, which asking the descriptor (``select``) would not see.

One thing is waited for: a writer that writes a line at a time (bash's ``printf`` does, one
``write`` per line) may wake the reader with its first line, the others a moment behind. So after
a line, when nothing more is readable, the reader waits `LINE_GRACE` for more before it decides the
message is whole. That wait starts at the reader's look, not at the first line's arrival: a reader
scheduled late still finds everything there, and waits nothing.

What arrives together is bounded (`READ_BOUND`): ``yes | switchboard chat`` is one message that never
ends, and read whole it grew in memory until the process was killed. A read that passes the bound
returns what it has as `Cut`, and the rest of what arrives with it is read and dropped, never kept
(nor sent as messages of its own): the message is refused as too long
(`platforms.local_messages.TooLong`), at once, not once its end comes, which may be never.
"""

from __future__ import annotations

import codecs
import io
import locale
import os
import select
from collections.abc import Callable
from typing import TextIO

from platforms.web import MAX_TEXT

CHUNK = 65536
PIPE_ENCODING = "utf-8-sig"
"""What a pipe or a file is read as, whatever the locale or ``PYTHONIOENCODING`` says (a byte that is not UTF-8 as
U+FFFD): what is piped in (``git diff``, a log, JSON) is UTF-8 whatever the terminal's encoding, and a setting made
for the output (``PYTHONIOENCODING=latin-1``) turned a piped ``café`` into ``cafÃ©``, unsaid. A terminal's keys come in
its own encoding: read in it. A byte order mark at the start (Notepad's, PowerShell's) is no text: as U+FEFF, glued to
the first line, it made a list's first item none."""
LINE_GRACE = 0.05
"""Seconds a line's reader waits for the next line of the same write burst (see above): far less
than anyone types a line in, far more than a writer takes from one ``write`` to its next."""
READ_BOUND = 2 * MAX_TEXT + 2
"""Characters a read holds, at most (plus a `CHUNK`), before it is cut (`Cut`). Twice the longest message
(the web chat's limit, `platforms.web.MAX_TEXT`): a message is its lines without their ends and
continuation backslashes (``\\``), at least half of what was read, so a read cut here is always a message
over the limit, never one the limit lets through."""


class Cut(str):
    """The start of what arrived together, more than `READ_BOUND` characters: the rest of it is read and
    dropped by the next read, which then returns what arrives after it."""


def reader_of(stream: TextIO) -> Callable[[], str]:
    """A blocking read of what arrived together on ``stream``: newline-terminated lines (the last
    one unterminated at the end of input), "" at the end of input; past `READ_BOUND` characters, their
    start as `Cut`. A stream without a descriptor (a test's ``StringIO``) is read a line at a time. A terminal is
    read in its encoding, anything else as `PIPE_ENCODING`."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return stream.readline
    encoding = PIPE_ENCODING
    if os.isatty(fd):
        encoding = getattr(stream, "encoding", None) or locale.getpreferredencoding(False)
    return _Together(fd, encoding).read


class _Together:
    def __init__(self, fd: int, encoding: str) -> None:
        self._fd = fd
        # Invalid bytes become U+FFFD (a stray byte must not end the reader), and CR LF or CR ends a line as LF does.
        self._decoder = io.IncrementalNewlineDecoder(codecs.getincrementaldecoder(encoding)("replace"), translate=True)
        self._ended = False
        self._dropping = False  # the last read was `Cut`: the rest of what arrived with it is dropped

    def read(self) -> str:
        if self._ended:
            return ""
        text = ""
        while True:
            try:
                data = os.read(self._fd, CHUNK)
            except BlockingIOError:  # a descriptor left non-blocking by whoever started us
                select.select([self._fd], [], [])
                continue
            except OSError:  # a terminal hung up (EIO): nothing more can be read
                data = b""
            if not data:
                self._ended = True
                end = self._decoder.decode(b"", final=True)
                return "" if self._dropping else text + end
            text += self._decoder.decode(data)
            if text.endswith("\n") and not _readable(self._fd, LINE_GRACE):
                if not self._dropping:
                    return text
                self._dropping = False  # the cut message's rest is gone: what comes next is a message again
                text = ""
            elif self._dropping:
                text = text[-1:]  # whether it ends a line is all that matters of it
            elif len(text) > READ_BOUND:
                self._dropping = True
                return Cut(text)


def _readable(fd: int, within: float) -> bool:
    """Whether ``fd`` has input (or its end) to read within ``within`` seconds."""
    try:
        return bool(select.select([fd], [], [], within)[0])
    except (OSError, ValueError):
        return False
