"""What `switchboard worker` reads of the configuration file.

A worker builds children (``model``, ``agent``, ``compression``, ``delegation``, ``lifecycle``, ``plugins``),
logs (``logging``) and, stopping, gives its calls ``server.shutdown_grace_seconds``; ``state_dir`` stays too,
which plugins may read (``ctx.config.state_dir``). It serves no chat and no HTTP: the chat platforms, what
users see, delivery, the inbox, sessions, traces and the rest of ``server`` are the gateway's alone. Left
out before anything is expanded or checked, their ``${VAR}``s need not be set on a worker's machine (the
platforms' tokens and secrets and the console's token stay on the gateway's), and a mistake in them, or an
unknown key among them, is the gateway's to report (`config check`), not every worker's. A ``--set`` of one
of their keys, typed for this worker, is told all the same (`unread_set_problems`): a warning that the worker
does not read it, or the gateway's error about an unknown key.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from gateway.config.interpolate import expand_tree
from gateway.config.overrides import apply_overrides, set_problems
from gateway.config.secret_values import secret_values
from gateway.config.sections import Config, ServerSettings
from gateway.config.validate import Validator

UNREAD_SECTIONS = ("platforms", "display", "delivery", "inbox", "sessions", "telemetry")
"""Top-level sections a worker does not read at all."""
SERVER_KEYS_READ = ("shutdown_grace_seconds",)
"""The keys of ``server`` a worker reads: it listens on no port."""
_SERVER_KEYS = [field.name for field in dataclasses.fields(ServerSettings)]


def worker_part(document: object) -> object:
    """``document`` (the parsed file, ``--set`` applied) as a worker reads it: each of `UNREAD_SECTIONS` left
    empty, and of ``server`` only `SERVER_KEYS_READ` and an unknown key nearest one of them. Emptied, not removed:
    a near miss of a section's name beside it (``platform_defaults: &d``, an anchor's holder) is then told as
    the gateway tells it, a warning."""
    if not isinstance(document, dict):
        return document  # the top level's own error stands
    part = {key: None if key in UNREAD_SECTIONS else value for key, value in document.items()}
    if isinstance(server := part.get("server"), dict):
        part["server"] = {key: value for key, value in server.items() if _read_server_key(key)}
    return part


def _read_server_key(key: object) -> bool:
    """Whether a worker reads ``key`` of ``server``: one of `SERVER_KEYS_READ`, or an unknown key whose nearest
    setting (as the validator's "did you mean" finds it) is: ``shutdown_grace_secs: 30`` left out, the worker
    gave its calls the default 10 s without a word, where the gateway warns (and refuses it from ``--set``)."""
    if key in SERVER_KEYS_READ or key in _SERVER_KEYS:
        return key in SERVER_KEYS_READ
    close = difflib.get_close_matches(str(key), _SERVER_KEYS, n=1, cutoff=0.6)
    return bool(close) and close[0] in SERVER_KEYS_READ


MODEL_KEYS_UNREAD = frozenset({"model.wait_when_down_seconds"})
"""``model`` keys a worker (and `switchboard ask`) holds but never acts on: only a chat message's turn waits for a
model server down to come back, and neither runs one."""


def reads_key(key: str) -> bool:
    """Whether a worker reads the setting at the dotted ``key`` (a ``--set``'s), as `worker_part` keeps it."""
    section, _, rest = key.partition(".")
    if section in UNREAD_SECTIONS or key in MODEL_KEYS_UNREAD:
        return False
    return section != "server" or not rest or _read_server_key(rest.partition(".")[0])


NOT_READ = ("switchboard worker does not read this setting, so it changes nothing here; it is the gateway's: give it"
            " to `switchboard run` (docs/scale-out.md)")
"""The warning about a ``--set`` of a known key a worker does not read, after the key."""
ASK_NOT_READ = ("switchboard ask does not read this setting, so it changes nothing here; it is the gateway's: give it"
                " to `switchboard run` or `switchboard chat`")
"""The same of `switchboard ask`, which runs one turn as a worker runs children: it reads what a worker reads
(`reads_key`). A plugin sees the setting in ``ctx.config`` all the same."""


def unread_set_problems(pairs: Sequence[str], reads: Callable[[str], bool] = reads_key,
                        not_read: str = NOT_READ) -> tuple[list[str], list[str]]:
    """The errors and warnings of the ``KEY=VALUE`` ``pairs`` (each one, `apply_overrides` took them) that set
    what a worker does not read (`reads_key`). `worker_part` drops them before the check, and the worker ran
    without a word while its operator took ``--set server.port=9000`` or ``--set platforms.telgram.token=…``
    for done. A key unknown to the gateway too is the error the gateway's ``--set`` of it is
    (`gateway.config.overrides.set_problems`); any other key a warning naming it, that the gateway reads it.
    Only keys are named: values may be secrets (their own warning is `set_problems`'s, beside these).
    ``reads`` and ``not_read`` tell of another command the same way (`ASK_NOT_READ`, `gateway.inbox_cli`), one
    that checks the whole file, so that these errors are among its own already: only the warnings are new there."""
    unread = [pair for pair in pairs if not reads(pair.partition("=")[0].strip())]
    if not unread:
        return [], []
    # Checked alone, over no file: whether a key is known does not hang on the file's values, and the gateway's
    # ``${VAR}``s need not be set here. Unknown keys only: what the gateway makes of a value is the gateway's.
    tree = apply_overrides(None, unread)
    validator = Validator(secret_values(Config, tree), Config)
    validator.section(Config, tree, "", defaults={"state_dir": Path()})
    errors = [error for error in set_problems(unread, validator.errors, validator.warnings, Config)[0]
              if error.startswith("--set ")]
    refused = {key for error in errors for key in error.removeprefix("--set ").partition(": ")[0].split(" and --set ")}
    keys = dict.fromkeys(pair.partition("=")[0].strip() for pair in unread)
    return errors, [f"--set {key}: {not_read}" for key in keys if key not in refused]


def unread_secrets(document: object, env: Mapping[str, str]) -> frozenset[str]:
    """The secret values set in what `worker_part` leaves out of ``document``: written there, or from a ``${VAR}``
    that ``env`` sets (unset, nothing and no error). Unread, they are the gateway's, but a worker that holds them
    (the shared file's own, or a machine's environment shared with a gateway) masks them as the gateway does,
    in its configuration's messages (one pasted into a key it reads) and in its log."""
    if not isinstance(document, dict):
        return frozenset()
    unread = {key: value for key, value in document.items() if key in UNREAD_SECTIONS}
    if isinstance(server := document.get("server"), dict):
        unread["server"] = {key: value for key, value in server.items() if key not in SERVER_KEYS_READ}
    return secret_values(Config, expand_tree(unread, env, "", []))
