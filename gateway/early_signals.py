"""The signal handlers `gateway.entry` sets first thing, until the command sets its own.

A signal lands wherever the program is, a finalizer too (an object's ``__del__``, a weakref's
callback, which the collector runs as loading makes garbage): Python only prints the exception a
handler raises there ("Exception ignored in ...") and goes on, and the gateway started and ran.
So the handlers also note the signal, and the loading, once done, ends as the signal would have;
meanwhile the exception they raise in a finalizer is not printed (it is no error: the signal ends
the program all the same), any other is, until SIGTERM or SIGHUP ends the program: then neither is
the failure of a finalizer of an object the signal cut short mid-construction (a transport of the
model check's connection), which printed a traceback under a clean stop. Past the loading too, until
the command sets its own handlers (a worker imports the Temporal SDK, connects, loads its plugins
first), a finalizer, or code that takes the exception for its own failure, can swallow it: the worker
ran on after ``docker stop``. The command then ends as the signal would have once it comes to set
its handlers (`lost_stop`, read by `gateway.stop_signals`), or once it returns if it sets none.
"""

from __future__ import annotations

import signal
import sys

_caught: int | None = None
"""A signal whose handler ran: until the command sets its own handlers, it is owed its end (`lost_stop`)."""


def terminate(signum: int, frame: object) -> None:
    global _caught
    _caught = signum
    # From here on the process is ending: the exception raised below may land in the middle of an object's
    # construction (a transport of the model check's connection), whose finalizer then fails at exit and
    # printed "Exception ignored in … AttributeError" with a traceback under a clean stop.
    sys.unraisablehook = unraisable
    raise SystemExit(128 + signum)


def interrupt(signum: int, frame: object) -> None:
    global _caught
    _caught = signum
    raise KeyboardInterrupt


def unraisable(report: object) -> None:
    """`sys.unraisablehook` while the program loads, and once a stop signal of ours has ended it: quiet about our
    handlers' own exceptions, and, after SIGTERM or SIGHUP, about the finalizers of what they cut short."""
    exc = getattr(report, "exc_value", None)
    if _caught is not None and (isinstance(exc, KeyboardInterrupt | SystemExit) or _caught != signal.SIGINT):
        return
    sys.__unraisablehook__(report)


def lost_stop() -> int | None:
    """The exit status of a stop signal whose handler ran yet did not end the program (its exception
    swallowed), or None: read where the program would otherwise go on as if no signal had come."""
    if _caught is None:
        return None
    return 130 if _caught == signal.SIGINT else 128 + _caught
