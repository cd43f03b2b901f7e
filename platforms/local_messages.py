"""How the lines the terminal chat reads become its messages.

A message is one line, or several lines pasted at once (a list to delegate), or lines joined with a
trailing backslash. A pasted block of commands alone (every line starts with ``/``) is one command per
line, in order (`commands_alone`). Pasted at once: with line editing, lines already typed ahead, or
within `PASTE_WINDOW`, when one ends; from a pipe, a file or a terminal without line editing, the lines
readable at once when the reader looks, however late its thread runs (`platforms.local_input`), never a
timer between lines. Ctrl-C pressed at readline's prompt (`CTRL_C`) is a message of its own, never
joined with the lines after it, nor with those entered just before it. A message over `MAX_TEXT` characters,
the web chat's limit, is `TooLong`: none of it is sent.

Apart from `platforms.local`: what a message is does not depend on how the lines were read (the reader
thread, `platforms.local_reader`) nor on what the chat does with it (the adapter).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TextIO

from platforms.formatting.blank import is_blank, trimmed
from platforms.local_input import Cut
from platforms.web import MAX_TEXT

PASTE_WINDOW = 0.05
"""With line editing, input reaching the terminal this soon after a line was pasted with it
(elsewhere what arrived together is what was readable at once: `platforms.local_input`).

Readline cannot use the pipes' rule: it reads a line at a time, and what waits in a terminal cannot
be looked at without reading it, so a paste cut at a line's end (one that comes over ssh in several
packets) would be split, and a next line half typed could not be told from a pasted one. A window is
safe here where it was not for pipes: a line already waiting ends the look at once, and the reader
hands over a waiting line in well under it (5 ms at the 99th percentile, 11 at most, on 2 loaded
cores). Its cost is the wait after a message's last line, 50 ms before the message is sent."""
CTRL_C = "\x03"
"""Ends a line read with readline when Ctrl-C is pressed (`platforms.local_tty.line_editing` binds
the key so); in input read without readline (a pipe), the character is text."""


class TooLong:
    """A message over `MAX_TEXT` characters (the web chat's limit: one chat's message is as long as the
    other's): none of it is sent, and nothing of it is kept past the limit. Passed on, a paste far over the
    model's context was refused by the model server only, after the gateway had recorded and sent it all;
    read whole, ``yes | switchboard chat`` grew in memory until the process was killed."""


def pressed_ctrl_c(text: str, *, editing: bool) -> bool:
    """Whether ``text`` is Ctrl-C pressed (with what was typed before it): only readline (``editing``) turns the
    key into a character (`CTRL_C`). Elsewhere the character is text like any other: a pipe or a file has no keys,
    and a terminal without line editing sends SIGINT for the key, so a 0x03 that arrives there was meant
    as data (quoted with Ctrl-V, or ``stty -isig``); acted on, it dropped every line read with it."""
    return editing and CTRL_C in text


async def next_message(next_line: Callable[[float | None], Awaitable[str]], keep: Callable[[str], None],
                       stream: TextIO, *, editing: bool) -> str | TooLong | None:
    """One message: a line, plus lines pasted with it (they arrive together: with line editing,
    typed ahead within `PASTE_WINDOW`; else read at once, `platforms.local_input.reader_of`) or continued
    with a trailing backslash. None at end of input; `TooLong` for a message over `MAX_TEXT` characters,
    once all of it has been read (its lines are counted, not kept), or at once when the reader cut it
    (`platforms.local_input.Cut`: the reader drops its rest itself).

    ``next_line(timeout)`` is the next line read ("" at the end of input; TimeoutError after ``timeout``);
    ``keep(line)`` puts a line read back for the next read: an end of input ("") that ends a message begun, or
    a Ctrl-C pressed within `PASTE_WINDOW` of the message's last line."""
    read = await next_line(None)
    if not read:
        return None
    if pressed_ctrl_c(read, editing=editing):  # a key, never joined with the lines after it
        return read.rstrip("\n")
    parts: list[str] = []
    size = -1  # the message's characters so far: its lines, and a newline between each two
    continued = False
    begun = 0  # where in ``parts`` the line being entered began (more than one, continued with backslashes)
    while True:
        if isinstance(read, Cut):
            return TooLong()
        got = read.removesuffix("\n").split("\n")
        if not continued:
            begun = len(parts) + len(got) - 1
        continued = got[-1].endswith("\\")
        got = [line.removesuffix("\\") for line in got]
        size += sum(len(line) + 1 for line in got)
        if size <= MAX_TEXT:
            parts += got
        else:
            parts.clear()  # its rest is still read, none of it a message of its own, but no longer kept
        if not continued and (not editing or not await typed_ahead(stream, PASTE_WINDOW)):
            break  # nothing more pasted (with line editing: no read started, whose prompt would show)
        try:
            read = await next_line(None if continued else PASTE_WINDOW)
        except TimeoutError:
            break
        if not read:
            keep(read)  # keep the EOF for the next read
            break
        if pressed_ctrl_c(read, editing=editing):
            # Lines entered, then Ctrl-C (arriving together over a slow ssh link): joined, the message held the key,
            # and the chat dropped every line of it as typed at an idle prompt, silently. They are sent, and the
            # key, read next, stops their turn ("Stopped the running turn."). One ending a line continued with a
            # backslash drops that line alone, as a shell's Ctrl-C drops a command continued so: it goes with the
            # key, as typed before it (joined with the key, the lines entered before it were dropped too).
            if continued and size <= MAX_TEXT:
                read = "\n".join(parts[begun:]) + read
                del parts[begun:]
                size = sum(len(line) + 1 for line in parts) - 1
                if not parts:
                    return read.rstrip("\n")  # the key, at the message's start
            keep(read)
            break
    return "\n".join(parts) if size <= MAX_TEXT else TooLong()


async def typed_ahead(stream: TextIO, timeout: float) -> bool:
    """Whether more input reaches the terminal within ``timeout``, left unread. Unknown (no
    descriptor, or one the loop cannot watch) counts as yes. The loop watches, not a thread of its
    shared default pool: the gateway's other blocking work can fill that, and the line would wait."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return True
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    try:
        loop.add_reader(fd, lambda: ready.done() or ready.set_result(True))
    except (NotImplementedError, OSError, ValueError):  # a loop or descriptor that cannot be watched: unknown
        return True
    try:
        async with asyncio.timeout(timeout):
            return await ready
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)


def commands_alone(text: str) -> bool:
    """Whether there are lines that are not blank (`is_blank`: a line of zero-width spaces is) and every one is a
    command (``/name``; one with invisible characters glued on too, as the gateway reads it: `trimmed`)."""
    lines = [line for line in text.split("\n") if not is_blank(line)]
    return bool(lines) and all(trimmed(line).startswith("/") for line in lines)
