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

UNREAD_SECTIONS = ("platforms", "display", "delivery", "inbox", "sessions", "telemetry")
"""Top-level sections a worker does not read at all."""
SERVER_KEYS_READ = ("shutdown_grace_seconds",)
"""The keys of ``server`` a worker reads: it listens on no port."""


def worker_part(document: object) -> object:
    """``document`` (the parsed file, ``--set`` applied) as a worker reads it: each of `UNREAD_SECTIONS` left
    empty, and of ``server`` only `SERVER_KEYS_READ`. Emptied, not removed: a near miss of a section's name
    beside it (``platform_defaults: &d``, an anchor's holder) is then told as the gateway tells it, a warning."""
    if not isinstance(document, dict):
        return document  # the top level's own error stands
    part = {key: None if key in UNREAD_SECTIONS else value for key, value in document.items()}
    if isinstance(server := part.get("server"), dict):
        part["server"] = {key: value for key, value in server.items() if key in SERVER_KEYS_READ}
    return part
