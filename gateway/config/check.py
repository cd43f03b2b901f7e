"""`switchboard config check [PATH]`: validate, then show what the gateway would run with."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TextIO

from gateway.config.loader import load_config
from gateway.config.overrides import from_set, only_with_set
from gateway.config.render import render_effective_config
from gateway.errors import ConfigError


def config_check(path: str | None, out: TextIO, err: TextIO, *, env: Mapping[str, str] | None = None,
                 overrides: Sequence[str] = ()) -> int:
    """Exit status 0 when the configuration loads, 1 when it has errors.

    ``out`` receives the effective configuration as YAML (secrets masked), headed
    by a comment naming its source, so it can be saved as a config file. ``err``
    receives one ``warning: ...`` or ``error: ...`` line per problem.
    """
    try:
        config, warnings = load_config(path, env=env, overrides=overrides)
    except ConfigError as exc:
        write_problems(exc, err)
        where = _where(exc, overrides)
        count = len(exc.errors)
        err.write(f"{count} error{'s' if count != 1 else ''}{where}; the gateway would not start\n")
        return 1
    for line in warnings:
        err.write(f"warning: {line}\n")
    origin = str(config.source) if config.source is not None else "built-in defaults (no config file found)"
    out.write(f"# effective configuration from {origin}\n")
    out.write(render_effective_config(config, env))
    return 0


def _where(exc: ConfigError, overrides: Sequence[str]) -> str:
    """Where ``exc``'s errors are, as the summary says it: the file, ``--set``, or both. An error a ``--set``
    brought about with the file's other keys is in both (`only_with_set`): it ended "1 error in <file>", and its
    operator searched a file that the same command without the --set found nothing wrong in."""
    places = {"set" if from_set(error, overrides) else "both" if only_with_set(error) else "file"
              for error in exc.errors}
    if "file" in places and exc.source is None:  # no file: those come of the environment or the defaults
        return ""
    where = ([str(exc.source)] if exc.source is not None and places & {"file", "both"} else []) + (
        ["--set"] if places & {"set", "both"} else [])
    return f" in {' and '.join(where)}" if where else ""


def write_problems(exc: ConfigError, err: TextIO) -> None:
    """One ``error: ...`` line per error, then one ``warning: ...`` line per warning: an
    operator who fixes the errors learns of a misspelt optional key now, not on the next run."""
    for line in exc.errors:
        err.write(f"error: {line}\n")
    for line in exc.warnings:
        err.write(f"warning: {line}\n")
