"""The signals that stop a long-running ``switchboard`` command gracefully.

SIGINT and SIGTERM, and SIGHUP too: closing the terminal a ``switchboard chat`` or a foreground
``switchboard run`` is in sends it, and its default action kills the process at once, which the
next start takes for a crash (the running turn's message is charged an attempt, and after
``inbox.max_attempts`` such closings it is set aside as a dead letter). A SIGHUP the process was
started ignoring (``nohup``) stays ignored: whoever started it asked it to outlive the terminal.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable

from gateway.early_signals import lost_stop

INTERRUPT_WITHIN = 0.5
"""Seconds the loop has, once the stop has begun, to raise a SIGINT's KeyboardInterrupt between two of its callbacks:
past them it is raised wherever the main thread is, as Python's own handler does. Code that blocks the loop during
the stop (a plugin's synchronous call) held a Ctrl-C for as long as it blocked, not ending the process at once."""


class StopSignals:
    """Calls ``stop`` on the first stop signal, then `release`s at once. `release` hands SIGINT and
    SIGTERM back to their defaults, so a second one ends the process at once as a supervisor that
    escalates expects (a second SIGTERM to PID 1, which the kernel spares the default action, with
    status 143 all the same), but keeps ignoring SIGHUP: the shell passes the terminal's hangup on to its
    jobs, so one hangup can arrive twice. `close`, after the stop, restores SIGHUP's default too.
    SIGINT's KeyboardInterrupt is raised by the loop between two of its callbacks (`_Interrupt`), not
    wherever the main thread is: there, a burst of them (a held key, an IDE sending several) cut the stop
    short in a finalizer or in the loop's own close, and ended the process with a traceback.

    Released by the first signal itself, not once the caller sees its stop begin: a signal during the
    start cancels it, and what had started unwinds before the stop proper (a platform's adapter closing
    its connection, up to seconds when the platform does not answer); a second signal meanwhile must end
    the process too, not be swallowed by a handler still in place. A stop for another reason (the
    terminal chat left) calls `release` itself. Idempotent.

    Raises SystemExit, with the signal's status, when a stop signal came before these handlers and
    its handler's exception did not end the start (`gateway.early_signals.lost_stop`)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, stop: Callable[[], None]) -> None:
        if (status := lost_stop()) is not None:
            # A stop signal came before these handlers, and its handler's exception was swallowed (in a
            # finalizer, by a plugin taking it for its own failure): the start ends now, as it would have then.
            raise SystemExit(status)
        self._loop = loop
        self._hangup = signal.getsignal(signal.SIGHUP) != signal.SIG_IGN
        self._released = False

        def first() -> None:
            stop()
            self.release()

        for signum in self._signals():
            loop.add_signal_handler(signum, first)

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        loop = self._loop
        _Interrupt().take(loop)
        loop.remove_signal_handler(signal.SIGTERM)
        if os.getpid() == 1:
            # A container's PID 1 (`deploy/Dockerfile` runs the command so): the kernel drops every signal
            # whose action is the default there, so a second SIGTERM would change nothing.
            signal.signal(signal.SIGTERM, _end_now)
        if self._hangup:
            loop.add_signal_handler(signal.SIGHUP, _again)

    def close(self) -> None:
        if self._hangup:
            self._loop.remove_signal_handler(signal.SIGHUP)

    def _signals(self) -> tuple[signal.Signals, ...]:
        return (signal.SIGINT, signal.SIGTERM, *((signal.SIGHUP,) if self._hangup else ()))


class _Interrupt:
    """SIGINT once the stop has begun: Python's KeyboardInterrupt, which ends the command at once (status 130,
    `gateway.cli`), raised out of the loop between two callbacks (`_on_loop`), or, the loop blocked past
    `INTERRUPT_WITHIN`, where the main thread is (`_on_signal`, the signal sent again by `_watch` to wake it).
    The watching thread is started here, not by the signal's handler: that runs wherever the main thread was,
    maybe holding the lock that starting a thread takes."""

    def __init__(self) -> None:
        self._came = 0  # SIGINTs come
        self._raised = 0  # of those, how many a KeyboardInterrupt was raised for
        self._overdue = False  # the next SIGINT is the watcher's: raise it where the main thread is
        self._watched = threading.Event()

    def take(self, loop: asyncio.AbstractEventLoop) -> None:
        threading.Thread(target=self._watch, name="sigint-watch", daemon=True).start()
        loop.add_signal_handler(signal.SIGINT, self._on_loop)
        # In place of asyncio's Python-level handler, which does nothing: the loop learns of the signal from its
        # wakeup file all the same (and `gateway.cli` removes it from the loop as before).
        signal.signal(signal.SIGINT, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        if self._overdue:
            self._overdue = False
            if self._raised < self._came:  # else the loop raised it meanwhile
                self._raised = self._came
                raise KeyboardInterrupt
            return
        self._came += 1
        self._watched.set()

    def _on_loop(self) -> None:
        if self._raised < self._came:
            self._raised = self._came
            raise KeyboardInterrupt

    def _watch(self) -> None:
        while True:
            self._watched.wait()
            self._watched.clear()
            came = self._came
            time.sleep(INTERRUPT_WITHIN)
            if self._raised < came and (main := threading.main_thread().ident) is not None:
                self._overdue = True
                signal.pthread_kill(main, signal.SIGINT)  # interrupts the blocking call, as the first SIGINT did


def _end_now(signum: int, frame: object) -> None:
    """A second SIGTERM to PID 1: what the signal's default action does to any other process."""
    os._exit(128 + signum)


def _again() -> None:
    """A further hangup while the stop runs: the stop is under way already."""
