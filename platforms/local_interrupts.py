"""SIGINT while the terminal chat runs: what Ctrl-C means there, when it arrives as a signal and not as a key.

On a terminal the chat turns the interrupt character off (`platforms.local_tty.keys_for_the_chat`), so the Ctrl-C
key reaches readline. A SIGINT still comes from what signals the process instead of typing the key: Emacs's shell
buffer (``C-c C-c`` signals the process group), ``kill -INT``, an IDE's stop button, a terminal without the chat's
keys (no readline, or the output redirected). As a stop signal (`gateway.stop_signals`) it ended the whole chat,
silent while the running turn had the shutdown grace (ten seconds by default) to finish.

Typed at (its input a terminal), the chat takes it as the key: a turn running (or waiting) is stopped, as
``/stop``, which says so; a second one within `AGAIN_WITHIN` seconds (no message sent in between), or one with
nothing running, leaves. From a pipe or a file (``yes | switchboard chat``, then Ctrl-C: the whole pipeline gets
it) it means quit: the running turn is stopped, as ``/stop``, and the chat leaves at once, not once the turn has
had its grace. Leaving hands SIGINT back to Python's default, as `gateway.stop_signals.StopSignals.release` does:
one more ends the process at once. The terminal is given back first, and the KeyboardInterrupt is raised by the
loop between two of its callbacks: raised wherever the main thread was, a burst of SIGINTs (a held key, an IDE
sending several) ended the chat part-way through its stop with a traceback, its terminal left without echo.
SIGTERM and SIGHUP stay the gateway's stop signals.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Awaitable, Callable

AGAIN_WITHIN = 2.0
"""Seconds within which a second SIGINT, the turn still running, leaves instead of stopping it again: the stop the
first asked for has not taken yet (a turn slow to unwind), or the person means to go."""

log = logging.getLogger(__name__)


class Interrupts:
    """The chat's SIGINT handler, on the running loop from `take` to `give_back` (idempotent, both).

    ``busy``: whether a turn runs or waits, which a SIGINT stops (``stop_turn``, which says so); ``leave`` ends the
    chat; ``interactive``: whether someone types at the chat's input. A ``stop_turn`` that fails is logged, and
    whatever else the SIGINT meant is done all the same."""

    def __init__(self, *, busy: Callable[[], bool], interactive: bool, stop_turn: Callable[[], Awaitable[None]],
                 leave: Callable[[], None], clock: Callable[[], float] = time.monotonic) -> None:
        self._busy = busy
        self._interactive = interactive
        self._stop_turn = stop_turn
        self._leave = leave
        self._clock = clock
        self._last: float | None = None  # when the last SIGINT came
        self._loop: asyncio.AbstractEventLoop | None = None
        self._answering: set[asyncio.Task[None]] = set()

    def take(self) -> None:
        """Handle SIGINT on the running loop, in place of the stop signal's handler; not where the loop can handle
        no signals (not POSIX, or not the main thread's loop: no process's Ctrl-C to take there)."""
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGINT, self.received)
            self._loop = loop

    def give_back(self) -> None:
        """SIGINT to Python's default again: a KeyboardInterrupt, which ends the command at once, raised out of
        the loop between two callbacks, until the loop closes."""
        if self._loop is not None:
            self._loop.add_signal_handler(signal.SIGINT, _interrupt)
            self._loop = None

    def new_turn(self) -> None:
        """A message went to the gateway: a SIGINT next is for its turn, not a second one for the turn before."""
        self._last = None

    def received(self) -> None:
        """A SIGINT came: stop the running turn, leave, or both (see the module's docstring)."""
        now = self._clock()
        again = self._last is not None and now - self._last < AGAIN_WITHIN
        self._last = now
        busy = self._busy()
        stops = busy and not again
        leaves = not busy or again or not self._interactive
        if leaves and not stops:
            self._leave()  # before the next SIGINT can end the process: leaving gives the terminal back
        if leaves:
            self.give_back()
        if stops:
            task = asyncio.ensure_future(self._stop_then(leave=leaves))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)

    async def _stop_then(self, *, leave: bool) -> None:
        try:
            await self._stop_turn()
        except Exception:
            log.exception("the terminal chat: a SIGINT could not stop the running turn")
        finally:
            if leave:
                self._leave()


def _interrupt() -> None:
    raise KeyboardInterrupt
