"""The ``switchboard`` command's entry point, apart from `gateway.cli` so that it imports nothing.

Loading the program takes a second or more (the SDKs, the agent, the store): Ctrl-C then must
end it as it does later, exit status 130 and no traceback, so the loading happens in here. So
must SIGTERM: in a container the command is PID 1, which the kernel spares every signal it set
no handler for, so `docker stop` did nothing until Docker killed it. A handler is set first thing
(exit status 143, as the signal's default); the gateway replaces it with its graceful stop.
"""

from __future__ import annotations

import signal


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main() -> int:
    signal.signal(signal.SIGTERM, _terminate)
    from gateway.process_exit import exit_process  # the standard library only: loads at once

    try:
        from gateway.cli import main as command

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
