"""The terminal as a chat platform: one chat, lines in, replies out.

A message is one line, or several lines pasted at once (a list to delegate), or
lines joined with a trailing backslash; a pasted block of commands alone is one command
per line (`platforms.local_messages`). The reader thread is `platforms.local_reader`. A message over
the web chat's limit (`platforms.web.MAX_TEXT` characters) is not sent: the chat says so (`TOO_LONG`).

On a terminal (input and output both TTYs) lines are read with GNU readline:
arrow keys, Home/End, Ctrl-R and this session's history work, and a reply that
arrives while you type is printed above the prompt with your half-typed line
redrawn as readline drew it, every row of it, readline's cursor where it was (read from
the library: `platforms.local_tty.typed_line`). Keys typed while the chat still handles the
line before are shown once, by the next read (the terminal's echo is off between reads). A terminal that did
not echo when the chat began is not made to (Emacs's shell buffer, which shows what is typed itself: each line
typed showed twice there), and readline draws no keys on it.
The terminal's settings are restored when the chat ends, however it ends, and taken again when
the chat runs on after a stop (Ctrl-Z, then the shell's ``fg``: `_resumed`). Bytes that are
not valid in the terminal's encoding become U+FFFD.

Ctrl-C there is a key, not SIGINT (the terminal's interrupt character is off while the
chat runs; readline ends the line with it, `CTRL_C`): while a turn runs (``busy``) it
stops the turn, as ``/stop``; at the prompt it drops what was typed, and at an empty
prompt it says how to leave, and leaves when pressed again. As SIGINT it stopped the
whole chat instead, printing nothing and waiting out the running turn's shutdown grace; a SIGINT that still
comes (Emacs's ``C-c C-c``, ``kill -INT``) is taken as the key, and a piped chat's stops its turn and leaves at
once (`platforms.local_interrupts`). A turn that a line
typed next stops (``display.busy_input_mode: interrupt``) says so too, ``⏹ Stopped for your next message``,
also before its first notice showed (`gateway.turn_runner.SAYS_SUPERSEDED`).
A reader that fails (the gateway could not record a message for want of storage, or the terminal could not
be read) ends the chat, saying why: nothing typed, Ctrl-C included, would be read any more. A message the
gateway fails on otherwise (a fault it trips) is answered that it could not be handled, and the chat goes on.

Input from a pipe or a file (read as UTF-8 whatever the locale says: `platforms.local_input.PIPE_ENCODING`) gets no
prompt: the output is the replies alone, and a Ctrl-C
character (0x03) in it is text like any other, as for most tools: a pipe has no keys. Its end
is the end of the questions, not of the chat: ``on_input_end`` is called, which lets
the chat end once everything asked has been answered (Ctrl-D on a terminal, or
``/quit``, leaves at once: ``on_exit``). Left on a terminal while a turn runs, the chat says so
at once (`LEAVING`) and ends as soon as the turn does, Ctrl-C still stopping it meanwhile; nothing typed
is read any more but Ctrl-C, so ``on_input_end`` is called too: a question the model asked waits no more.

Notices and progress cards are redrawn in place when one is the last thing on a terminal's
screen, and all of it still is, in a window as wide as when it was drawn (a resized one may have
wrapped it anew); otherwise an update is printed anew. A redraw goes up over every row the old text
took, wrapped at the terminal's width (wide characters take two columns), so a notice wider than
the window leaves no stale rows behind. Output that is no terminal (a pipe, a file) keeps a notice
as first printed: its updates, one a second with `make run`'s settings, would be so many lines for
whatever reads it. So does a dumb terminal (``TERM=dumb``: Emacs's shell buffer; or ``TERM`` unset), which
shows the escape sequences that move a cursor as garbage: it gets none (`platforms.local_screen.moves_cursor`),
and a reply that arrives while a line is typed goes on the next row, the prompt and the line drawn again under it.
Someone reads that screen, though: how the work ended (``✓ Done in 42 s``, ``⏹ Stopped for your next message``), the
last state of a notice or card, is printed anew under it (`UNDER_WAY`).
Readline still reads there (it draws without them), so Ctrl-C is a key there too. No colours are used anywhere:
``NO_COLOR`` has nothing to turn off, and ``FORCE_COLOR`` nothing to force.

What the agent sends is printed as written (Markdown and all), except control
characters, which are shown (ESC as ␛) and never obeyed: a reply cannot drive the
terminal (`shown`). On a terminal that is not UTF-8 (a Latin-1 locale) a character its
encoding lacks is printed as ``?`` (ESC's ␛ as ``^[``), and so is one it would take for a
control (`printable`).

When nothing reads the output any more (``switchboard chat | head -1``, or a terminal hung
up: its window closed, its ssh connection dropped) the chat ends at once. A reply it could
not print stays in the outbox for the next chat, and so does every later one (a turn still
running gets the shutdown grace to finish): `send` raises `Closed`, so the outbox tries the
terminal no more in this process instead of retrying for the grace. The next chat numbers its
messages apart from every earlier one's: an update the outbox kept for a message of a screen that is
gone (the card of a turn that ran on after a hang-up) is printed anew, never drawn over this chat's.

A file the agent sends (``send_file``) is copied into ``files_dir`` (a name already there gets
``-2``, ``-3``...: `platforms.local_files`) and its path printed, with the caption: the terminal's
person is the operator, on the gateway's machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import getpass
import itertools
import logging
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from platforms.base import (
    Closed,
    CommandSpec,
    DisplayTier,
    EditUnsupported,
    Inbound,
    InboundSink,
    Outbound,
    OutboundFile,
    Sent,
    scalar_text,
)
from platforms.formatting.blank import is_blank, trimmed
from platforms.local_files import UPLOAD_LIMIT, keep
from platforms.local_interrupts import Interrupts
from platforms.local_messages import CTRL_C, TooLong, commands_alone, next_message, pressed_ctrl_c
from platforms.local_reader import Lines, PromptDraw
from platforms.local_screen import height, moves_cursor, printable, prompt_again, prompt_start, rows, shown, width
from platforms.local_tty import (
    cursor_after,
    echoes,
    ended_in_line_mode,
    keys_for_the_chat,
    line_editing,
    restore_tty,
    set_echo,
    tty_state,
    typed_line,
    up,
    waiting,
)
from platforms.not_recorded import NOT_HANDLED_MESSAGE, storage_refusal
from platforms.web import MAX_TEXT

CHAT_ID = "terminal"
PROMPT = "you> "
_PREFIX = {"reply": "agent> ", "completion": "agent> ", "interim": "agent (working)> ", "command": "", "notice": ""}
_QUIT = frozenset({"/quit", "/exit"})

log = logging.getLogger(__name__)

LEAVE_HINT = "(Ctrl-C again, Ctrl-D or /quit leaves the chat)"
LEAVING = "(Leaving once the agent has finished; Ctrl-C stops it now)"
"""Said at once when the chat is left (/quit, Ctrl-D) while a turn runs: the chat ends when it does."""
TOO_LONG = f"(Not sent: a message must be at most {MAX_TEXT} characters; this one had more, and none of it was sent)"
"""Said for a message over the web chat's limit (`platforms.local_messages.TooLong`). Passed on, a paste
beyond the model's context failed only at the model server, after the gateway had recorded all of it."""
LEAVE_POLL = 0.1
"""Seconds between looks at whether the turn a leaving chat waits for has ended."""
UNDER_WAY = "⏳"
"""What every state of a progress message but its last begins with (`gateway.notices`, `gateway.progress_card`);
the last, how the work ended, does not (`gateway.notices.final_text`)."""
OWN_COMMANDS = (CommandSpec("quit", "Leave the chat (also /exit, Ctrl-D, or Ctrl-C twice)"),)
"""Commands the terminal handles itself; the gateway's /help lists them too."""


class LocalAdapter:
    name = "local"
    tier = DisplayTier(interim_assistant_messages=True, long_running_notifications=True, messaging=False)
    text_limit = 100_000
    typing_interval = 0.0  # a terminal needs no typing indicator

    own_commands = OWN_COMMANDS
    caption_limit = text_limit
    counts_characters = True  # `measure` is len: `platforms.base.CountsCharacters`

    def __init__(self, *, input: TextIO | None = None, output: TextIO | None = None, user: str | None = None,
                 on_exit: Callable[[], Any] | None = None, on_input_end: Callable[[], Any] | None = None,
                 greeting: str | Callable[[], str] | None = None, files_dir: Path | None = None,
                 busy: Callable[[], bool] | None = None) -> None:
        """``busy``: whether the chat has a turn running or waiting, which Ctrl-C stops. ``greeting``, the
        first screen, may be a function, called at `start`: what it says may depend on the gateway's state."""
        self.files_dir = files_dir or Path("sent-files")
        self._input = input or sys.stdin
        self._output = output or sys.stdout
        self._user = user or _user_name()
        self._on_exit = on_exit
        self._on_input_end = on_input_end or on_exit
        self._tells_input_end = on_input_end is not None  # else a pipe's end is the chat's: on_exit
        self._busy = busy or (lambda: False)
        self._leaving = False  # Ctrl-C was pressed at an empty, idle prompt: pressed again, it leaves
        self._leaving_after_turn = False  # left while a turn ran: the chat ends once it has
        self._greeting = greeting
        self._start_problems: list[str] = []  # shown under the greeting
        self._greeted = False
        self._ids = itertools.count(1)
        # Ids of this chat alone: an edit the outbox kept from an earlier chat (one whose terminal hung up
        # mid-turn) names a message of that chat's screen, gone, while its "1" was this chat's first message:
        # the old card's "✓ Done" was drawn over this chat's answer, printed before it (`edit`).
        self._chat_tag = os.urandom(4).hex()
        self._last_id: str | None = None  # the message on the last line, for in-place redraws
        self._last_rows = 1  # the screen rows it took, wrapped: a redraw goes up over all of them
        # The width they were counted at: a terminal that rewraps its lines when its window is resized shows the
        # message on more rows or fewer, and a redraw by the old count left stale rows or erased the message above.
        self._last_width = 0
        self._reader: asyncio.Task | None = None
        self._terminal = _isatty(self._output)
        # Escapes that move the cursor: not on a dumb terminal (`moves_cursor`), which $TERM names for the process's
        # own output; one handed in (a test's screen) is taken to draw as a VT100 does.
        self._ansi = self._terminal and (output is not None or moves_cursor(os.environ.get("TERM")))
        self._encoding: str | None = getattr(self._output, "encoding", None)  # what it can print (`printable`)
        # Nobody types at a pipe or a file: a prompt there would only be glued to the replies.
        self._interactive = _isatty(self._input)
        # Where "you> " goes: where what is typed shows. With the output redirected (`switchboard chat > out.txt`),
        # the terminal on stderr, if any: in the file, the prompts were glued to the replies, the terminal had none.
        self._prompts = None if not self._interactive else self._output if self._terminal or output is not None \
            else sys.stderr if _isatty(sys.stderr) else None
        self._prompt_aside = False  # "you> " is on the terminal on stderr (`_prompts`), waiting for input
        self._prompting = False  # "you> " is on screen, waiting for input
        # What readline's read shows before the line: none for a later line of a paste, whose lines arrive
        # together (a 2,000-line log showed 2,000 prompts, one per line).
        self._prompt = PROMPT
        self._readline: ModuleType | None = None  # set by start() on a terminal
        self._ended_early = False  # Ctrl-D was pressed before the chat took the terminal (`start`)
        self._saved_tty: Any = None
        self._echoes = False  # the terminal showed what was typed when the chat took it (`platforms.local_tty.echoes`)
        self._retake = False  # resumed after a stop: the read under way ends in the shell's modes (`_resumed`)
        self._on_resume: asyncio.AbstractEventLoop | None = None  # the loop handling SIGCONT, until `stop`
        self._interrupts: Interrupts | None = None  # SIGINT, until `stop`
        self._output_gone = False  # the reader of the output went away: nothing more can be shown
        self._tty_lock = threading.Lock()  # the reader's echo switches against stop()'s restore
        self._prompt_draw = PromptDraw()  # printing waits for a prompt readline is drawing

    def measure(self, text: str) -> int:
        return len(text)

    async def start(self, sink: InboundSink, commands: Sequence[CommandSpec] = ()) -> None:
        reconfigure = getattr(self._input, "reconfigure", None)
        if reconfigure is not None:
            # Strict decoding would kill the reader at the first stray byte (a paste in Latin-1).
            reconfigure(errors="replace")
        if self._input is sys.stdin and _isatty(self._input) and self._terminal:  # a dumb one too: no escapes
            self._readline = line_editing()
            self._saved_tty = tty_state(self._input)
            self._echoes = echoes(self._saved_tty)
            if self._readline is not None:
                self._ended_early = ended_in_line_mode(self._input)  # Ctrl-D pressed as the gateway started
                keys_for_the_chat(self._input, self._saved_tty)  # Ctrl-C reaches readline as a key
                self._handle_resume()
        if self._input is sys.stdin and self._on_exit is not None:  # the process's SIGINT: this chat's Ctrl-C
            self._interrupts = Interrupts(busy=self._busy, interactive=self._interactive,
                                          stop_turn=lambda: self._stop_turn(sink), leave=self._end)
            self._interrupts.take()
        self.greet()
        self._reader = asyncio.ensure_future(self._read(sink))
        self._reader.add_done_callback(self._read_ended)

    def show_start_problems(self, lines: Sequence[str]) -> None:
        """`platforms.base.OperatorScreen`: printed by `greet`, after the greeting, before the first prompt."""
        self._start_problems = list(lines)

    def greet(self) -> None:
        """`platforms.base.OperatorScreen`: the greeting and the start's problems, once (`start` greets
        unless the gateway did first, before its outbox printed what an earlier chat left unshown)."""
        if self._greeted:
            return
        self._greeted = True
        greeting = self._greeting() if callable(self._greeting) else self._greeting
        if greeting:
            self._write(greeting)
        if self._start_problems:
            self._write(shown("\n".join(self._start_problems)) + "\n")

    async def stop(self) -> None:
        """Stop reading and give the terminal back as it was. Idempotent."""
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None
        with self._prompt_draw.after():
            if self._prompting:
                # The shell's prompt comes next: at the start of a clean line, not after a stale "you> ".
                self._emit("\r\x1b[2K" if self._ansi else "\n")
                self._prompting = False
        if self._prompt_aside:  # the shell's prompt comes next there
            self._aside("\n")
        if self._on_resume is not None:
            self._on_resume.remove_signal_handler(signal.SIGCONT)
            self._on_resume = None
        self._give_terminal_back()
        if self._interrupts is not None:  # the gateway's stop is under way: a SIGINT now ends the process at once
            self._interrupts.give_back()
            self._interrupts = None

    def _give_terminal_back(self) -> None:
        """The terminal's settings as they were before the chat. Idempotent."""
        with self._tty_lock:  # the reader thread turns echo on and off only while the chat has the terminal
            if self._saved_tty is not None:
                # A reader thread stuck in readline leaves the terminal raw (no echo) when the process exits.
                restore_tty(self._input, self._saved_tty)
                self._saved_tty = None

    async def _read(self, sink: InboundSink) -> None:
        lines = Lines(self._input, None if self._readline is None else self._edit_line)
        pasted: deque[str] = deque()  # the commands of a pasted block still to run
        lines.read_on()
        while True:
            if self._readline is None and self._prompts is self._output is not None:  # readline shows its own
                self._write(PROMPT, newline=False)
                self._prompting = True
            elif self._readline is None and self._prompts is not None:
                self._prompt_aside = self._aside(PROMPT)
            text = pasted.popleft() if pasted else await self._next_message(lines)
            if self._readline is None:
                self._prompting = self._prompt_aside = False
            if isinstance(text, TooLong):
                self._leaving = False
                await self.send(Outbound(CHAT_ID, None, TOO_LONG, kind="command"))
                continue
            if text is not None and "\n" in text and commands_alone(text):
                first, *rest = (line for line in text.split("\n") if not is_blank(line))
                pasted.extend(rest)
                text = first
            if text is None and not self._interactive and self._on_input_end is not None:
                self._on_input_end()  # a pipe or a file ran out: its messages still get their answers
                return
            if text is None or trimmed(text).lower() in _QUIT:  # Ctrl-D or an explicit quit: leave
                if self._interactive and self._busy():
                    await self._leave_after_turn(sink, lines, ended=text is None)
                self._end()
                return
            if self._pressed_ctrl_c(text):
                if await self._ctrl_c(sink, typed=text.replace(CTRL_C, "")):
                    return
                continue
            if is_blank(text):  # zero-width spaces alone too: a turn of the model answering what no one could read
                continue
            self._leaving = False
            self._last_id = None
            if self._interrupts is not None:
                self._interrupts.new_turn()
            await self._hand_over(sink, Inbound(
                platform=self.name, chat_id=CHAT_ID, thread_id=None, user_id=self._user,
                user_name=self._user, text=text, event_id=f"local-{os.urandom(8).hex()}",  # unique across restarts
                is_command=text.startswith("/"),
            ))

    async def _hand_over(self, sink: InboundSink, inbound: Inbound) -> None:
        """Hand ``inbound`` to the gateway. One it fails on before recording it, for a reason of its own (a fault
        the message trips), is answered `NOT_HANDLED_MESSAGE`, and the chat goes on: the same message would fail
        alike at every try, and raised, it ended the whole chat for one odd line. A refusal of its storage (a full
        disk: `storage_refusal`) is raised, and ends the chat, saying why (`_read_ended`): nothing typed could be
        taken until there is room."""
        try:
            await sink(inbound)
        except Exception as exc:
            if storage_refusal(exc):
                raise
            log.exception("the terminal chat: the gateway failed on event %s before recording it; answered that it"
                          " could not be handled", inbound.event_id)
            await self.send(Outbound(CHAT_ID, None, NOT_HANDLED_MESSAGE, kind="command"))

    async def _leave_after_turn(self, sink: InboundSink, lines: Lines, *, ended: bool) -> None:
        """Left (/quit, Ctrl-D: ``ended``) while a turn runs: say so at once, and return once the
        turn (and what waits behind it) is over; Ctrl-C meanwhile stops it, as /stop. Leaving at
        once would sit silent for the shutdown grace, with Ctrl-C no longer a key of the chat."""
        self._leaving_after_turn = True
        self._emit(("\r\x1b[2K" if self._ansi else "\n") if self._prompting else "")
        self._prompting = False  # no prompt while leaving: nothing typed is read but Ctrl-C
        self._write(LEAVING)
        self._last_id = None
        if self._tells_input_end:
            # No answer can be typed now: a question the model asked would hold the turn, and the chat, for
            # the question's timeout (ten minutes by default) under a screen that says it is leaving.
            self._on_input_end()
        if ended and self._readline is not None:
            lines.read_on()  # a terminal's Ctrl-D ended one read, not the terminal: Ctrl-C is read
        while self._busy():
            try:
                line = await lines.next(LEAVE_POLL)
            except TimeoutError:
                continue
            if self._pressed_ctrl_c(line):
                await self._ctrl_c(sink, typed="")
            elif not line:
                return  # the terminal is gone: nothing can stop the turn from here but the shutdown

    def _read_ended(self, reader: asyncio.Task[None]) -> None:
        """The reader failed (the gateway could not record a message, its database full): nothing typed
        is read any more, Ctrl-C included (a key here, not SIGINT), so the chat ends, saying why."""
        if reader.cancelled() or (exc := reader.exception()) is None:
            return
        log.error("the terminal chat stopped reading: %s: %s", type(exc).__name__, exc, exc_info=exc)
        self._write(("\n" if self._prompting else "") + f"(The chat has ended: {type(exc).__name__}: {exc})")
        self._prompting = False
        self._end()

    async def _ctrl_c(self, sink: InboundSink, *, typed: str) -> bool:
        """Ctrl-C, with ``typed`` on the line (dropped): stop the running turn, or at an idle prompt
        say how to leave, and leave if it was pressed there just before. True once the chat is left."""
        self._last_id = None  # its line is under the last message now: that one is not redrawn in place
        if self._busy():
            await self._stop_turn(sink)
            return False
        if typed.strip():  # as a shell does: the line is gone, the next one starts afresh
            self._leaving = False
            return False
        if self._leaving:
            self._end()
            return True
        self._leaving = True
        await self.send(Outbound(CHAT_ID, None, LEAVE_HINT, kind="command"))
        return False

    async def _stop_turn(self, sink: InboundSink) -> None:
        """``/stop``, for Ctrl-C (the key, or SIGINT: `platforms.local_interrupts`) while a turn runs."""
        self._leaving = False
        await self._hand_over(sink, Inbound(
            platform=self.name, chat_id=CHAT_ID, thread_id=None, user_id=self._user, user_name=self._user,
            text="/stop", event_id=f"local-{os.urandom(8).hex()}", is_command=True))

    def _edit_line(self, more: bool) -> str:
        """One line typed with readline's editing, newline-terminated like readline(); "" at EOF. A later line
        of a message begun (``more``) gets no prompt when it is already waiting: a paste's."""
        if self._ended_early:  # the first read, of a terminal whose input had ended: Ctrl-D, as if pressed now
            self._ended_early = False
            return ""
        leaving = self._leaving_after_turn
        set_hook = getattr(self._readline, "set_pre_input_hook", None)  # libedit may lack it: no wait then
        if set_hook is not None:
            self._prompt_draw.drawing()
            set_hook(self._prompt_draw.drawn)
        self._prompting = not leaving
        self._prompt = "" if leaving or (more and waiting(self._input)) else PROMPT
        self._echo(self._echoes)  # readline draws what it reads only on a terminal it finds echoing
        try:
            line = input(self._prompt)
        except EOFError:  # Ctrl-D leaves "you> " on screen, for stop() to clear
            return ""
        except OSError as exc:
            if exc.errno != errno.EIO:
                raise
            # The terminal hung up (its window closed, its ssh connection dropped): its input has ended,
            # as at Ctrl-D, and not by a fault of the chat's. Readline reports it so only at times.
            return ""
        finally:
            self._prompt_draw.drawn()
            self._after_read()
        self._prompting = False
        if CTRL_C in line:  # not a line to find again with the arrow keys or Ctrl-R
            with contextlib.suppress(ValueError):  # libedit counts history otherwise: kept there
                self._readline.remove_history_item(self._readline.get_current_history_length() - 1)
        return line + "\n"

    def _pressed_ctrl_c(self, text: str) -> bool:
        """Whether ``text`` is Ctrl-C pressed: `platforms.local_messages.pressed_ctrl_c`."""
        return pressed_ctrl_c(text, editing=self._readline is not None)

    def _echo(self, on: bool) -> None:
        """Turn the terminal's echo on or off, while the chat has the terminal (not once `stop` gave it back)."""
        with self._tty_lock:
            if self._saved_tty is not None:
                set_echo(self._input, on)

    def _after_read(self) -> None:
        """Echo off, so that keys typed before the next read are drawn by it, not twice; all the chat's
        settings again after a read the chat was resumed in (`_resumed`)."""
        with self._tty_lock:
            if self._saved_tty is None:
                return
            if self._retake:
                self._retake = False
                keys_for_the_chat(self._input, self._saved_tty)
            else:
                set_echo(self._input, False)

    def _handle_resume(self) -> None:
        loop = asyncio.get_running_loop()
        with contextlib.suppress(AttributeError, NotImplementedError, RuntimeError, ValueError):
            # No SIGCONT (not POSIX), or a loop that handles no signals (not the main thread's): not resumed.
            loop.add_signal_handler(signal.SIGCONT, self._resumed)
            self._on_resume = loop

    def _resumed(self) -> None:
        """SIGCONT: the chat runs on after a stop (Ctrl-Z, then the shell's ``fg``). The shell gave the terminal
        back in its own settings: Ctrl-C was SIGINT again, which ended the whole chat (mid-turn, waiting out the
        shutdown grace) instead of stopping the turn, and the kernel's line mode and echo were on. The chat takes
        its settings again, now and once the read under way ends: readline, resumed too, may have taken the
        shell's as those to give back with its line. What the shell printed is under the last message, which is
        not redrawn in place over it, and the prompt, which readline does not draw again, is drawn under it."""
        with self._tty_lock:
            if self._saved_tty is None:
                return
            self._retake = True
            keys_for_the_chat(self._input, self._saved_tty)
        self._last_id = None
        with self._prompt_draw.after():
            if self._prompting:  # from the start of its row: there after `fg`, and where it was after a bare SIGCONT
                self._emit((self._prompt_start() + "\x1b[J" if self._ansi else "\n") + self._prompt_again())

    async def _next_message(self, lines: Lines) -> str | TooLong | None:
        """One message (`platforms.local_messages.next_message`); None at end of input."""
        begun = False

        async def next_line(timeout: float | None) -> str:
            nonlocal begun
            more, begun = begun, True
            return await lines.next(timeout, more=more)

        return await next_message(next_line, lines.keep, self._input, editing=self._readline is not None)

    async def send(self, message: Outbound) -> Sent:
        """Print the message. Raises `Closed` once nothing reads the output: the outbox keeps the
        message (and sends nothing more to the terminal), and the next chat prints it."""
        message_id = f"{self._chat_tag}-{next(self._ids)}"
        text = scalar_text(_PREFIX.get(message.kind, "") + shown(message.text))
        with self._prompt_draw.after():
            # Above the prompt, then it again (with what was typed after it) under the message.
            above = ((self._prompt_start() + "\x1b[J") if self._ansi else "\n") if self._prompting else ""
            after = self._prompt_again() if self._prompting else ""
            shown_ok = self._emit(above + text + "\n" + after)
        if not shown_ok:
            raise Closed("nothing reads the terminal's output any more", method="send", chat_id=message.chat_id)
        self._last_id, self._last_rows, self._last_width = message_id, self._rows(text), width(self._output)
        return Sent(message_id)

    def upload_limit(self, chat_id: str) -> int:
        return UPLOAD_LIMIT

    async def send_file(self, message: Outbound, file: OutboundFile) -> Sent:
        """Copy the file into ``files_dir`` and print where it is, then the caption. A copy whose
        path could not be printed is removed: the outbox sends the file again (in the next chat),
        which must not leave ``report.csv`` behind and print ``report-2.csv``."""
        if self._output_gone:
            raise Closed("nothing reads the terminal's output any more", method="send_file",
                               chat_id=message.chat_id)
        kept = await asyncio.to_thread(keep, Path(file.path), self.files_dir / file.name)
        caption = f"\n{message.text}" if message.text else ""
        try:
            return await self.send(Outbound(message.chat_id, message.thread_id, f"📎 {file.name}: {kept}{caption}",
                                            kind=message.kind))
        except Closed:
            kept.unlink(missing_ok=True)
            raise

    async def edit(self, chat_id: str, thread_id: str | None, message_id: str, text: str) -> None:
        """Redraw the message in place, when it is this chat's last one on a terminal, all its rows are
        still on the screen and the window is as wide as when it was drawn (resized, the terminal may have
        wrapped it anew, over rows that cannot be counted); else (an earlier chat's too) `EditUnsupported`,
        and the gateway prints the update anew. On output that is no terminal (a pipe, a file) the message is
        left as it was printed, as on a platform that cannot change what it sent: every update of a notice or
        a card printed anew was one more line a second (`make run`'s notices), a whole card each time. So on a dumb
        terminal, but for the last state, how the work ended (`UNDER_WAY`): `EditUnsupported`, and the gateway prints
        it anew. Left as it was, the turn's end went unsaid: the gateway counts on the message to say it (a turn the
        next line stopped said nothing at all of it)."""
        if self._output_gone:
            raise Closed("nothing reads the terminal's output any more", method="edit", chat_id=chat_id)
        if not self._ansi:
            if self._terminal and not text.startswith(UNDER_WAY):
                raise EditUnsupported("a dumb terminal cannot redraw a message", method="edit", chat_id=chat_id)
            return
        text = shown(scalar_text(text))
        below = 1  # the rows under the message, to the cursor's: they and the message's must all be on the screen
        if self._prompting:
            prompt = self._prompt
            below += cursor_after(prompt + "".join(typed_line(self._readline, len(prompt))), width(self._output))[0]
        if (message_id != self._last_id or width(self._output) != self._last_width
                or self._last_rows + below > height(self._output)):
            raise EditUnsupported("the terminal can only redraw its last message", method="edit", chat_id=chat_id)
        with self._prompt_draw.after():
            # Up to the message's line (past the prompt when it shows), redraw, come back.
            start = self._prompt_start() if self._prompting else "\r"
            prompt = self._prompt_again() if self._prompting else ""
            # Up over every row the message took (a line wider than the window wraps), erase them all.
            shown_ok = self._emit(f"{start}{up(self._last_rows)}\x1b[J{text}\n{prompt}")
        if not shown_ok:
            raise Closed("nothing reads the terminal's output any more", method="edit", chat_id=chat_id)
        self._last_rows, self._last_width = self._rows(text), width(self._output)

    def _rows(self, text: str) -> int:
        return rows(printable(text, self._encoding), width(self._output))  # as printed: a wide 検 as ? takes 1

    def _prompt_start(self) -> str:
        return prompt_start(self._readline, self._prompt, width(self._output))

    def _prompt_again(self) -> str:
        return prompt_again(self._readline, self._prompt, width(self._output), ansi=self._ansi)

    async def typing(self, chat_id: str, thread_id: str | None) -> None:
        return None

    async def idle(self, chat_id: str, thread_id: str | None) -> None:
        return None

    def web_routes(self) -> Sequence[Any]:
        return ()

    def _write(self, text: str, *, newline: bool = True) -> None:
        self._emit(scalar_text(text) + ("\n" if newline else ""))

    def _aside(self, text: str) -> bool:
        """Write ``text`` to the terminal on stderr that shows the prompts (`_prompts`); False if it could not."""
        try:
            self._prompts.write(printable(text, getattr(self._prompts, "encoding", None)))
            self._prompts.flush()
        except (OSError, ValueError):  # gone (hung up), or closed: the prompt is only a help, the chat goes on
            return False
        return True

    def _emit(self, text: str) -> bool:
        """Write and flush ``text``; False, and the chat ends, when nothing reads the output."""
        if self._output_gone:
            return False
        try:
            self._output.write(printable(text, self._encoding))
            self._output.flush()
        except BlockingIOError:  # an output left non-blocking, and full for now: still read
            raise
        except OSError:
            # `switchboard chat | head -1` (EPIPE: the reader has what it wanted), or a terminal hung up
            # (EIO: its window closed, its ssh connection dropped). Either way, what is not shown stays owed.
            self._output_gone = True
            self._end()
            return False
        return True

    def _end(self) -> None:
        # Given back now, not at the gateway's stop: a SIGINT from here on ends the process at once, which
        # may come before that stop (a burst of them: a held key, an IDE sending several).
        self._give_terminal_back()
        if self._on_exit is not None:
            self._on_exit()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no such method, or a closed stream
        return False


def _user_name() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return "you"
