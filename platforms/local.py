"""The terminal as a chat platform: one chat, lines in, replies out.

A message is one line, or several lines pasted at once (a list to delegate), or
lines joined with a trailing backslash.

Notices are redrawn in place when the notice is the last thing on screen and the
output is a terminal; otherwise an update is printed as a new line.
"""

from __future__ import annotations

import asyncio
import getpass
import itertools
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from platforms.base import CommandSpec, DisplayTier, EditUnsupported, Inbound, InboundSink, Outbound, Sent

CHAT_ID = "terminal"
PROMPT = "you> "
_PREFIX = {"reply": "agent> ", "completion": "agent> ", "interim": "agent (working)> ", "command": "", "notice": ""}
_QUIT = frozenset({"/quit", "/exit"})
PASTE_WINDOW = 0.05  # lines arriving this close together were pasted as one message


class LocalAdapter:
    name = "local"
    tier = DisplayTier(interim_assistant_messages=True, long_running_notifications=True, messaging=False)
    text_limit = 100_000
    typing_interval = 0.0  # a terminal needs no typing indicator

    def __init__(self, *, input: TextIO | None = None, output: TextIO | None = None, user: str | None = None,
                 on_exit: Callable[[], Any] | None = None) -> None:
        self._input = input or sys.stdin
        self._output = output or sys.stdout
        self._user = user or _user_name()
        self._on_exit = on_exit
        self._ids = itertools.count(1)
        self._last_id: str | None = None  # the message on the last line, for in-place redraws
        self._reader: asyncio.Task | None = None
        self._ansi = bool(getattr(self._output, "isatty", lambda: False)())
        self._prompting = False  # "you> " is on screen, waiting for input

    def measure(self, text: str) -> int:
        return len(text)

    async def start(self, sink: InboundSink, commands: Sequence[CommandSpec] = ()) -> None:
        self._reader = asyncio.ensure_future(self._read(sink))

    async def stop(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None

    async def _read(self, sink: InboundSink) -> None:
        lines: asyncio.Queue[str] = asyncio.Queue()
        # A daemon thread: a blocked readline() must never keep the process alive after /quit.
        threading.Thread(target=self._pump, args=(asyncio.get_running_loop(), lines), daemon=True,
                         name="switchboard-terminal").start()
        while True:
            self._write(PROMPT, newline=False)
            self._prompting = True
            text = await self._next_message(lines)
            self._prompting = False
            if text is None or text.strip().lower() in _QUIT:  # EOF or an explicit quit
                if self._on_exit is not None:
                    self._on_exit()
                return
            if not text.strip():
                continue
            self._last_id = None
            await sink(Inbound(
                platform=self.name, chat_id=CHAT_ID, thread_id=None, user_id=self._user,
                user_name=self._user, text=text, event_id=f"local-{os.urandom(8).hex()}",  # unique across restarts
                is_command=text.startswith("/"),
            ))

    def _pump(self, loop: asyncio.AbstractEventLoop, lines: asyncio.Queue) -> None:
        """Worker thread: every line read (and "" at EOF) goes to the loop."""
        while True:
            line = self._input.readline()
            try:
                loop.call_soon_threadsafe(lines.put_nowait, line)
            except RuntimeError:  # the loop is gone: the chat is over
                return
            if not line:
                return

    async def _next_message(self, lines: asyncio.Queue) -> str | None:
        """One message: a line, plus lines pasted with it (they arrive together) or
        continued with a trailing backslash. None at end of input."""
        first = await lines.get()
        if not first:
            return None
        parts = [first.rstrip("\n")]
        while True:
            continued = parts[-1].endswith("\\")
            if continued:
                parts[-1] = parts[-1][:-1]
            try:
                line = await asyncio.wait_for(lines.get(), None if continued else PASTE_WINDOW)
            except TimeoutError:
                break
            if not line:
                lines.put_nowait("")  # keep the EOF for the next read
                break
            parts.append(line.rstrip("\n"))
        return "\n".join(parts)

    async def send(self, message: Outbound) -> Sent:
        message_id = str(next(self._ids))
        if self._prompting:  # print above the prompt, then show the prompt again
            self._output.write("\r\x1b[2K" if self._ansi else "\n")
        self._write(_PREFIX.get(message.kind, "") + message.text)
        self._last_id = message_id
        if self._prompting:
            self._write(PROMPT, newline=False)
        return Sent(message_id)

    async def edit(self, chat_id: str, thread_id: str | None, message_id: str, text: str) -> None:
        if not self._ansi or message_id != self._last_id or "\n" in text:
            raise EditUnsupported("the terminal can only redraw its last line", method="edit", chat_id=chat_id)
        # Up to the message's line (past the prompt when it shows), redraw, come back.
        clear_prompt = "\r\x1b[2K" if self._prompting else "\r"
        self._output.write(clear_prompt + "\x1b[1A\x1b[2K" + text + "\n" + (PROMPT if self._prompting else ""))
        self._output.flush()

    async def typing(self, chat_id: str, thread_id: str | None) -> None:
        return None

    async def idle(self, chat_id: str, thread_id: str | None) -> None:
        return None

    def web_routes(self) -> Sequence[Any]:
        return ()

    def _write(self, text: str, *, newline: bool = True) -> None:
        self._output.write(text + ("\n" if newline else ""))
        self._output.flush()


def _user_name() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return "you"
