"""The terminal chat's reader thread and its two hand-offs with the loop: the lines it reads (`Lines`), and
the prompt it is drawing, which printing waits for (`PromptDraw`).

Reading blocks (readline, or a pipe's descriptor), so it runs in a thread of its own; the chat, in the loop,
takes what it read in order. Apart from `platforms.local`: when a line is read and handed over is the thread's
business; what a line means (`platforms.local_messages`) and what the chat does with it are the adapter's.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import TextIO

from platforms.local_input import reader_of

SCREEN_WAIT = 1.0
"""Seconds printing waits, at most, for readline to finish drawing its prompt (`PromptDraw`)."""


class Lines:
    """What the reader thread read, in order: lines ("" at the end of input), or what reading raised.

    With line editing (``edit_line``, one line typed with readline) a line is read only once asked for
    (`next`), told whether it is a later line of a message begun (``more``); else the lines that arrived
    together (`platforms.local_input.reader_of`) are read ahead."""

    def __init__(self, stream: TextIO, edit_line: Callable[[bool], str] | None) -> None:
        self._stream = stream
        self._edit_line = edit_line
        self._queue: asyncio.Queue[str | Exception] = asyncio.Queue()
        # With line editing the reader draws "you> " as it starts a read: it reads only when asked, so
        # no prompt is drawn while the chat still handles the line before (a second Ctrl-C, /quit)
        # and, the chat ending on it, the shell's line is left with a stray "you> ".
        self._wanted = threading.Semaphore(0)
        self._asked = False  # a read has been asked for and its line has not arrived yet
        self._more = False  # the read asked for is of a later line of a message begun (`next`)
        self._kept: deque[str] = deque()  # lines put back (`keep`), taken before any read

    def read_on(self) -> None:
        """Start a reader thread (again, once one ended at a terminal's Ctrl-D: Ctrl-C is still read)."""
        # A daemon thread: a blocked readline() must never keep the process alive after /quit.
        threading.Thread(target=self._pump, args=(asyncio.get_running_loop(),), daemon=True,
                         name="switchboard-terminal").start()

    async def next(self, timeout: float | None = None, *, more: bool = False) -> str:
        """The next line read, asking the reader for one when none is waiting (``more``: a later line of a
        message begun); TimeoutError after ``timeout``; what the reader raised, when reading failed
        (`LocalAdapter._read_ended` ends the chat)."""
        if self._kept:
            return self._kept.popleft()
        if self._edit_line is not None and self._queue.empty() and not self._asked:  # else it reads ahead, unasked
            self._asked = True
            self._more = more
            self._wanted.release()
        line = await asyncio.wait_for(self._queue.get(), timeout)
        if isinstance(line, Exception):
            raise line
        return line

    def keep(self, line: str) -> None:
        """Put ``line`` back (an end of input, ""), for the next `next`."""
        self._kept.append(line)

    def _arrived(self, line: str | Exception) -> None:
        self._asked = False
        self._queue.put_nowait(line)

    def _pump(self, loop: asyncio.AbstractEventLoop) -> None:
        """Worker thread: what is read goes to the loop ("" at EOF). With line editing, a line, read
        only once asked for (`next`); else the lines that arrived together (`reader_of`), read ahead."""
        read = reader_of(self._stream) if self._edit_line is None else None
        while True:
            line: str | Exception
            try:
                if read is not None:
                    line = read()
                else:
                    self._wanted.acquire()
                    line = self._edit_line(self._more)
            except Exception as exc:  # the chat, waiting for a line that never comes, would hang: it ends
                line = exc
            try:
                loop.call_soon_threadsafe(self._arrived, line)
            except RuntimeError:  # the loop is gone: the chat is over
                return
            if not isinstance(line, str) or not line:
                return


class PromptDraw:
    """Held by the reader from deciding that "you> " shows until readline has drawn it (its
    pre-input hook): a reply printed in between went out before the prompt and had it glued
    after it, the reply's own prompt missing ("you> agent> ..."). Printing waits for the draw."""

    def __init__(self) -> None:
        self._screen = threading.Lock()
        self._drawing = False  # the reader holds `_screen` (touched by the reader thread only)

    def drawing(self) -> None:
        """In the reader thread, before a read whose prompt readline draws: printing waits from now."""
        self._screen.acquire()
        self._drawing = True

    def drawn(self) -> None:
        """Readline's pre-input hook, in the reader thread: the prompt shows, printing may go on."""
        if self._drawing:
            self._drawing = False
            self._screen.release()

    @contextlib.contextmanager
    def after(self) -> Iterator[None]:
        """Around printing in the loop: once a prompt the reader is drawing shows. Bounded:
        a terminal whose output is held (Ctrl-S) keeps readline drawing, and the loop must go on."""
        held = self._screen.acquire(timeout=SCREEN_WAIT)
        try:
            yield
        finally:
            if held:
                self._screen.release()
