"""Ending the ``switchboard`` process once its command has returned, or SIGTERM has ended it
before the command set its own handlers (`gateway.entry`).

A process that loaded Temporal's client (the gateway on the Temporal engine, a worker) ends
without the interpreter's finalization: the SDK's Rust runtime keeps threads that may call
into Python while it finalizes, which aborts the process (``Fatal Python error:
PyGILState_Release``, temporalio/sdk-python#300) — seen about once in 25 when a worker stops
after Temporal refused it, so its one-line reason was followed by a core dump and status 134.
By then the command has closed what it opened (the state database, the journal, the trace
exporter), so only the logs and the standard streams are left to flush, and they are flushed
here. Every other process ends as usual, unless its stop left work behind that ignores its
cancellation (`gateway.left_behind`): that one ends the same way, or its event loop's clean-up would
wait for that work for ever.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from typing import NoReturn

_TEMPORAL_RUNTIME = "temporalio.bridge.temporal_sdk_bridge"


def exit_process(status: int) -> NoReturn:
    """End the process with ``status``, skipping finalization where Temporal's runtime is loaded."""
    _ignore_interrupts()
    if _TEMPORAL_RUNTIME not in sys.modules:
        sys.exit(status)
    end_process_now(status)


def end_process_now(status: int) -> NoReturn:
    """End the process with ``status`` at once: the logs and the standard streams flushed, nothing
    else run. Also for a process that left work behind at its stop (`gateway.left_behind`), which
    the interpreter's finalization would wait for."""
    _ignore_interrupts()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away, a stream already closed: nothing left to tell
            pass
    os._exit(status)


def _ignore_interrupts() -> None:
    """SIGINT ignored from here to the end: the command is over, and one more of a burst of them (a held key, an IDE
    sending several) only cut its end short, with a traceback (``Exception ignored in … threading``), or killed the
    process outright once the interpreter had set the signal's default back as it finalizes (status -2, not 130)."""
    with contextlib.suppress(ValueError):  # not the main thread: the process's signals are not this thread's to set
        signal.signal(signal.SIGINT, signal.SIG_IGN)
