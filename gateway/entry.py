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

What those handlers do, and how a signal whose exception was swallowed still ends the command:
`gateway.early_signals`.
"""

from __future__ import annotations

import signal
import sys

from gateway.early_signals import interrupt, lost_stop, terminate, unraisable


def main() -> int:
    sys.unraisablehook = unraisable
    signal.signal(signal.SIGTERM, terminate)
    if signal.getsignal(signal.SIGHUP) == signal.SIG_DFL:
        signal.signal(signal.SIGHUP, terminate)
    # Python's own handler until the program is loaded; then it is Python's again, which asyncio.run
    # looks for before it sets its own (a first Ctrl-C cancels the command's loop, raising nothing).
    signal.signal(signal.SIGINT, interrupt)
    try:
        # Quick, yet it loads `logging` and `re`: a Ctrl-C meanwhile, with no `try` around it, printed a traceback.
        from gateway.process_exit import exit_process  # the standard library only
    except KeyboardInterrupt:
        return 130
    try:
        from gateway.cli import main as command

        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = sys.__unraisablehook__
        if (lost := lost_stop()) is not None:  # its exception was lost in a finalizer
            return lost
        status = command()
        if (lost := lost_stop()) is not None:  # `ask` and `inbox` set no handlers of their own to read it
            status = lost
    except KeyboardInterrupt:  # also from what runs before the command's own loop (config, state lock)
        status = 130  # through `exit_process`, which ignores the rest of a burst of them (a held Ctrl-C)
    except SystemExit as stop:
        if not isinstance(stop.code, int):  # sys.exit("a message") or sys.exit(): ended as usual
            raise
        # SIGTERM before the command set its own handlers (a worker connecting to Temporal or loading
        # its plugins): that process may have loaded Temporal's runtime too.
        status = stop.code
    exit_process(status)  # where Temporal's runtime is loaded, without the finalization that can abort
