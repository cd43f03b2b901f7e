"""The gateway-owned settings (`display`, `server`, `delivery`, `inbox`, `sessions`, `logging`, `telemetry`) and
`Config`.

`Config` is the whole validated configuration: the agent's and lifecycle's own
sections plus the gateway's. Built by `gateway.config.loader.load_config`; every
field has a default, so `Config()` is the embedded-defaults configuration.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agent.settings import AgentSettings, CompressionSettings, ModelSettings, nested, setting
from gateway.config.home import NoHome, expand_user, home, why_no_home, xdg_directory
from gateway.config.platform_settings import PLATFORM_NAMES, PlatformsSettings, empty_mapping
from gateway.errors import ConfigError
from lifecycle.settings import DelegationSettings, LifecycleSettings

BusyInputMode = Literal["interrupt", "queue", "steer"]
LongRunning = bool | Literal["generic"]
ProgressFinal = Literal["summary", "delete"]
Progress = Literal["off", "card"]


@dataclass(frozen=True, slots=True)
class DisplayOverrides:
    """Per-platform display settings; None means "not set here, ask the next level"."""

    interim_assistant_messages: bool | None = setting(
        None, "Send the assistant's interim messages on this platform; inherits when unset."
    )
    long_running_notifications: LongRunning | None = setting(
        None, "'Still working' notices on this platform: true, false or generic; inherits when unset."
    )
    busy_input_mode: BusyInputMode | None = setting(
        None, "What a message does while a turn runs on this platform; inherits when unset."
    )
    progress: Progress | None = setting(
        None, "A live progress card for running turns on this platform (card) or notices only (off); inherits when"
        " unset."
    )
    progress_delay: float | None = setting(
        None, "Seconds a turn runs before its progress card appears on this platform; inherits when unset.", min=0
    )
    progress_final: ProgressFinal | None = setting(
        None, "What a turn's progress message becomes when the turn ends on this platform; inherits when unset."
    )
    max_message_parts: int | None = setting(
        None, "Parts a message is sent in at most on this platform (0: no bound); inherits when unset.", min=0
    )


@dataclass(frozen=True, slots=True)
class DisplaySettings:
    interim_assistant_messages: bool | None = setting(
        None, "Send the assistant's interim messages; the platform's default when unset."
    )
    long_running_notifications: LongRunning | None = setting(
        None, "'Still working' notices: true, false or generic (no details); the platform's default when unset."
    )
    busy_input_mode: BusyInputMode = setting(
        "interrupt", "What a message does while a turn runs: interrupt it, queue behind it, or steer it. In a group,"
        " only the member who started the turn does so; another member's message waits for its turn."
    )
    progress: Progress | None = setting(
        None, "card: a running turn shows one live progress message, edited in place; off: long-running notices"
        " only. The platform's default when unset (card on Telegram, Slack and Discord)."
    )
    progress_delay: float = setting(2.0, "Seconds a turn runs before its progress card appears.", min=0)
    progress_final: ProgressFinal = setting(
        "summary", "When a turn ends, its progress message is edited to a one-line outcome (summary) or deleted"
        " where the platform can delete (delete)."
    )
    max_message_parts: int = setting(
        16, "Parts a message is sent in at most: one that splits into more (a looping answer, a dump of a large"
        " file) is sent as its first parts up to this, then the whole of it as a file, answer.md, or where the"
        " platform takes no file that large (or the answer is for one user alone, as a Slack slash command's), a"
        " note saying how much was left out. 0: no bound.", min=0
    )
    platforms: Mapping[str, DisplayOverrides] = field(
        default_factory=empty_mapping,
        # known_keys: a misspelt platform name is warned about instead of silently doing nothing.
        metadata={"doc": "Overrides by platform name: telegram, slack, discord, web, webhook, or local (the"
                         " terminal chat).", "known_keys": PLATFORM_NAMES},
    )


@dataclass(frozen=True, slots=True)
class ServerSettings:
    host: str = setting("127.0.0.1", "Address the HTTP server (webhooks, web chat, health) listens on.")
    port: int = setting(8080, "Port of the HTTP server; 0 picks a free one.", min=0, max=65535)
    shutdown_grace_seconds: float = setting(
        10.0, "How long a shutdown may take: running turns finish, then the outbox is flushed, then the Temporal"
        " engine sends its last requests, within it; HTTP requests in progress get it too, alongside.", min=0)
    header_timeout_seconds: float = setting(
        10.0, "A new connection must send its first request's line and headers within this long.", min=0.1
    )
    idle_timeout_seconds: float = setting(
        75.0, "A kept-alive connection is closed after waiting this long for its next request.", min=0.1
    )
    body_timeout_seconds: float = setting(
        30.0, "A request's body must arrive in full within this long after its headers, or it gets 408 (503 if a"
        " shutdown's grace ends first).", min=0.1
    )
    max_connections: int = setting(
        256, "Open HTTP connections at most; at the cap the oldest is closed to make room.", min=1
    )
    console: bool = setting(True, "Serve the operator console at /console (see docs/console.md).")
    console_token: str | None = setting(
        None, "Token for the operator console and /metrics (Authorization: Bearer); required when server.host is"
        " not a loopback address and the console is on.",
        secret=True,
    )


@dataclass(frozen=True, slots=True)
class DeliverySettings:
    max_retry_after: float = setting(
        # At 0 a refused call would be sent again at once, and again, while the platform still refuses it.
        60.0, "Longest platform-requested retry wait honoured, in seconds (at least 0.1); a longer one is cut to"
        " this.", min=0.1
    )
    late_after: float = setting(
        600.0, "A message first sent this many seconds or more after it was written is preceded by a note saying"
        " how old it is, and a message that waited this long for its turn is answered with a note quoting it"
        " (0: never; not on webhooks).", min=0
    )


@dataclass(frozen=True, slots=True)
class InboxSettings:
    max_attempts: int = setting(
        3, "Times the gateway tries to handle an event before setting it aside as a dead letter (a gateway that"
        " died while the event's turn ran counts as a try; not while it waited for the answer to a question, unless"
        " children it launched ran in the gateway's process).",
        min=1
    )


@dataclass(frozen=True, slots=True)
class SessionsSettings:
    retention_days: float = setting(
        0.0, "Days a chat's session (its conversation, pinned delegation mode and backend) is kept after its last"
        " turn or command; then it is forgotten, and the chat's next message starts a new session, as after /new."
        " 0: kept until /new.", min=0
    )


@dataclass(frozen=True, slots=True)
class TelemetrySettings:
    otlp_endpoint: str | None = setting(
        None, "OTLP/HTTP endpoint traces are exported to, e.g. http://127.0.0.1:4318 (/v1/traces is added when the"
        " URL has no path); unset: no traces."
    )
    capture_content: bool = setting(
        False, "Record prompts, replies, tool arguments and tool results in spans; off: only names, ids, sizes,"
        " tokens and timings."
    )
    service_name: str = setting("switchboard", "The service.name resource attribute of exported traces.")


@dataclass(frozen=True, slots=True)
class LoggingSettings:
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = setting("INFO", "Lowest level logged.")
    format: Literal["text", "json"] = setting("text", "text for people, json (one object per line) for collectors.")
    repeat_window_seconds: float = setting(
        30.0, "A line identical to one logged less than this long ago is dropped and counted; 0 keeps all.", min=0
    )


def default_state_dir(env: Mapping[str, str]) -> Path:
    """The state directory when the config file does not name one.

    ``$SWITCHBOARD_STATE_DIR``, else ``$XDG_STATE_HOME/switchboard``, else
    ``~/.local/state/switchboard``. Raises `ConfigError` (one line naming what to set) where
    that needs a home directory the process does not have.
    """
    if explicit := env.get("SWITCHBOARD_STATE_DIR"):
        try:
            return expand_user(Path(explicit)).absolute()
        except NoHome as exc:
            raise ConfigError([f"$SWITCHBOARD_STATE_DIR: {explicit} {exc}"]) from None
    # The XDG spec says relative values are invalid and must be ignored.
    if (xdg := xdg_directory(env, "XDG_STATE_HOME")) is not None:
        return xdg / "switchboard"
    if (user_home := home()) is None:
        raise ConfigError(["state_dir: not set, and there is no home directory for its default,"
                           f" ~/.local/state/switchboard ({why_no_home()}); set state_dir,"
                           " $SWITCHBOARD_STATE_DIR or $HOME"])
    return user_home / ".local" / "state" / "switchboard"


@dataclass(frozen=True, slots=True)
class Config:
    model: ModelSettings = nested(ModelSettings, "The parent agent's model.")
    agent: AgentSettings = nested(AgentSettings, "The parent agent.")
    compression: CompressionSettings = nested(CompressionSettings, "Context compaction.")
    delegation: DelegationSettings = nested(DelegationSettings, "Children started by delegate_task.")
    lifecycle: LifecycleSettings = nested(LifecycleSettings, "The lifecycle core that runs children.")
    display: DisplaySettings = nested(DisplaySettings, "What users see while the agent works.")
    # strict_keys: a misspelt `telgram:` or `enabeld:` would leave a platform silently off.
    platforms: PlatformsSettings = nested(PlatformsSettings, "Chat platforms.", strict_keys=True)
    server: ServerSettings = nested(ServerSettings, "The HTTP server.")
    delivery: DeliverySettings = nested(DeliverySettings, "Outbound message delivery.")
    inbox: InboxSettings = nested(InboxSettings, "Inbound events the gateway cannot handle.")
    sessions: SessionsSettings = nested(SessionsSettings, "Chat sessions and their conversations.")
    logging: LoggingSettings = nested(LoggingSettings, "Log output.")
    telemetry: TelemetrySettings = nested(TelemetrySettings, "OpenTelemetry traces.")
    state_dir: Path = field(
        # Reading the environment here keeps `Config()` meaning what a user gets with no file: where that
        # is an error (no home directory), it raises it. The loader reads its own ``env`` instead.
        default_factory=lambda: default_state_dir(os.environ),
        metadata={"doc": "Directory for the database and workspace; relative paths are relative to the config file."},
    )
    plugins: tuple[str, ...] = setting((), "Importable module names of plugins to load (each has register(ctx)).")
    source: Path | None = field(
        default=None, metadata={"doc": "The file this configuration came from; None for defaults.", "internal": True}
    )
