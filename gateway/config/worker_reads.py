"""What `switchboard worker` reads of the configuration file.

A worker builds children (``model``, ``agent``, ``compression``, ``delegation``, ``lifecycle``, ``plugins``),
logs (``logging``) and, stopping, gives its calls ``server.shutdown_grace_seconds``; ``state_dir`` stays too,
which plugins may read (``ctx.config.state_dir``). It serves no chat and no HTTP: the chat platforms, what
users see, delivery, the inbox, sessions, traces and the rest of ``server`` are the gateway's alone. Left
out before anything is expanded or checked, their ``${VAR}``s need not be set on a worker's machine (the
platforms' tokens and secrets and the console's token stay on the gateway's), and a mistake in them, or an
unknown key among them, is the gateway's to report (`config check`), not every worker's.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping

from gateway.config.interpolate import expand_tree
from gateway.config.secret_values import secret_values
from gateway.config.sections import Config, ServerSettings

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
