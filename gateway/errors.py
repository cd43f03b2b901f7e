"""Errors of the gateway.

    GatewayError
    ├── ConfigError           the configuration could not be loaded (errors, warnings, source)
    └── StartupError          something the operator must fix stopped the start (one line)
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


class GatewayError(Exception):
    """Root of every error the gateway package raises."""


class ConfigError(GatewayError):
    """The configuration is unusable; nothing was started.

    ``errors`` holds every problem found (not only the first), each a line such as
    ``server.port: expected an integer ≥ 0 and ≤ 65535, got 70000``; ``warnings``
    holds what would have been warned about had the load succeeded. ``source`` is
    the file that was read, or None for built-in defaults. Messages never contain
    the value of a secret setting.
    """

    def __init__(self, errors: Iterable[str], warnings: Iterable[str] = (), source: Path | None = None):
        self.errors = list(errors)
        self.warnings = list(warnings)
        self.source = source
        where = f" in {source}" if source is not None else ""
        lines = "\n".join(f"  - {e}" for e in self.errors)
        super().__init__(f"invalid configuration{where}:\n{lines}")


class StartupError(GatewayError):
    """The gateway cannot start until the operator fixes something outside the config's
    syntax: the state directory, the database, a port, a URL.

    ``str(error)`` is one line that names the file, key or URL and the fix, without
    secrets. Nothing was accepted from any platform when it is raised.

    ``lasting`` says every start fails alike until the operator changes something (a key or URL no
    server could take, a setting that contradicts the command): `gateway.startup_errors.lasting` then
    gives the exit status a supervisor does not restart on. False (the default) for what may mend by
    itself: a server not up yet, a lock's holder on its way out, a disk not mounted yet.
    """

    def __init__(self, message: str, *, lasting: bool = False) -> None:
        super().__init__(message)
        self.lasting = lasting
