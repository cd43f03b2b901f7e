"""The ``switchboard`` command's entry point, apart from `gateway.cli` so that it imports nothing.

Loading the program takes a second or more (the SDKs, the agent, the store): Ctrl-C then must
end it as it does later, exit status 130 and no traceback, so the loading happens in here. So
must SIGTERM: in a container the command is PID 1, which the kernel spares every signal it set
no handler for, so `docker stop` did nothing until Docker killed it. A handler is set first thing
(exit status 143, as the signal's default); the gateway replaces it with its graceful stop. SIGHUP
(the terminal closed) alike, status 129: its default action killed the process outright, while it
loaded or checked the model server, and a running gateway stops gracefully on it, so a hangup
a moment earlier ended it unlike any other stop. `switchboard ask` sets no handlers of its own: both
end it so throughout. Not over a SIGHUP the process was started ignoring (``nohup``):
`gateway.stop_signals` reads that to keep ignoring it.

A signal lands wherever the program is, a finalizer too (an object's ``__del__``, a weakref's
callback, which the collector runs as loading makes garbage): Python only prints the exception a
handler raises there ("Exception ignored in ...") and goes on, and the gateway started and ran.
So the handlers also note the signal, and the loading, once done, ends as the signal would have;
meanwhile the exception they raise in a finalizer is not printed (it is no error: the signal ends
the program all the same), any other is, until SIGTERM or SIGHUP ends the program: then neither is
the failure of a finalizer of an object the signal cut short mid-construction (a transport of the
model check's connection), which printed a traceback under a clean stop.
"""

from __future__ import annotations

import signal
import sys

_caught: int | None = None
"""A signal whose handler ran while the program loaded."""


def _terminate(signum: int, frame: object) -> None:
    global _caught
    _caught = signum
    # From here on the process is ending: the exception raised below may land in the middle of an object's
    # construction (a transport of the model check's connection), whose finalizer then fails at exit and
    # printed "Exception ignored in … AttributeError" with a traceback under a clean stop.
    sys.unraisablehook = _unraisable
    raise SystemExit(128 + signum)


def _interrupt(signum: int, frame: object) -> None:
    global _caught
    _caught = signum
    raise KeyboardInterrupt


def _unraisable(report: object) -> None:
    """`sys.unraisablehook` while the program loads, and once a stop signal of ours has ended it: quiet about our
    handlers' own exceptions, and, after SIGTERM or SIGHUP, about the finalizers of what they cut short."""
    exc = getattr(report, "exc_value", None)
    if _caught is not None and (isinstance(exc, KeyboardInterrupt | SystemExit) or _caught != signal.SIGINT):
        return
    sys.__unraisablehook__(report)


def main() -> int:
    sys.unraisablehook = _unraisable
    signal.signal(signal.SIGTERM, _terminate)
    if signal.getsignal(signal.SIGHUP) == signal.SIG_DFL:
        signal.signal(signal.SIGHUP, _terminate)
    # Python's own handler until the program is loaded; then it is Python's again, which asyncio.run
    # looks for before it sets its own (a first Ctrl-C cancels the command's loop, raising nothing).
    signal.signal(signal.SIGINT, _interrupt)
    try:
        # Quick, yet it loads `logging` and `re`: a Ctrl-C meanwhile, with no `try` around it, printed a traceback.
        from gateway.process_exit import exit_process  # the standard library only
    except KeyboardInterrupt:
        return 130
    try:
        from gateway.cli import main as command

        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = sys.__unraisablehook__
        if _caught is not None:  # its exception was lost in a finalizer
            return 130 if _caught == signal.SIGINT else 128 + _caught
        status = command()
    except KeyboardInterrupt:  # also from what runs before the command's own loop (config, state lock)
        return 130
    except SystemExit as stop:
        if not isinstance(stop.code, int):  # sys.exit("a message") or sys.exit(): ended as usual
            raise
        # SIGTERM before the command set its own handlers (a worker connecting to Temporal or loading
        # its plugins): that process may have loaded Temporal's runtime too.
        status = stop.code
    exit_process(status)  # where Temporal's runtime is loaded, without the finalization that can abort
