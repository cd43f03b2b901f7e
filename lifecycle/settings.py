"""Typed settings for children (`delegation.*`) and the lifecycle core (`lifecycle.*`).

See `agent.settings` for the field-metadata conventions the config loader reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from agent.settings import nested, setting

RouteProvider = Literal["openai", "demo"]


def _no_routes() -> Mapping:
    # dataclasses refuse unhashable defaults, so immutable mappings come from a factory.
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ModelRoute:
    """One named option of the ``model_map`` backend. The model reads only its name and description."""

    description: str | None = setting(None, "What the option is for, as the parent model reads it (required).")
    provider: RouteProvider | None = setting(None, "Provider of the option's model: openai or demo (required).")
    model: str | None = setting(None, "Model name sent to the provider (required).")
    base_url: str | None = setting(
        None, "Chat-completions base URL (openai provider only); model.base_url when unset and the provider is"
        " model.provider."
    )
    api_key: str | None = setting(
        None, "API key for base_url (openai provider only); with base_url unset, model.api_key (the same server);"
        " else $OPENAI_API_KEY.",
        secret=True,
    )


@dataclass(frozen=True, slots=True)
class ProfileRoute:
    """One named profile of the ``profile_routes`` backend: a child routed to it runs as that profile."""

    description: str | None = setting(None, "What the profile is for, as the parent model reads it (required).")
    provider: RouteProvider | None = setting(
        None, "Provider of the profile's model (needs model); model.provider when unset."
    )
    model: str | None = setting(None, "The profile's model; the default child model when unset.")
    base_url: str | None = setting(
        None, "Chat-completions base URL of the profile's model (needs model; openai provider only, as for model_map)."
    )
    api_key: str | None = setting(
        None, "API key of the profile's model (needs model; openai provider only, as for model_map).", secret=True
    )
    system_prompt: str | None = setting(None, "The persona: the first part of the child's system prompt.")
    context_files: tuple[Path, ...] = setting(
        (), "Skill or context files whose text the child gets in its system prompt; relative to the config file."
    )
    toolsets: tuple[str, ...] | None = setting(
        None, "Toolsets the child may use (only ever narrows its parent's); the parent's when unset."
    )


@dataclass(frozen=True, slots=True)
class DelegationSettings:
    max_concurrent_children: int = setting(10, "Most tasks one delegate_task call may run at once.", min=1)
    max_spawn_depth: int = setting(1, "How deep orchestrator children may nest.", min=1)
    max_iterations: int = setting(250, "A child's tool-call budget.", min=1)
    child_timeout_seconds: float = setting(
        0.0, "Idle cap for a child (any progress restarts it); <= 0 off, positive values below 30 become 30."
    )
    model: str | None = setting(None, "Model for children started after the change; the parent's when unset.")
    provider: Literal["demo", "openai", "scripted"] | None = setting(None, "Provider for children; the parent's when unset.")
    max_summary_chars: int = setting(24_000, "Characters of a child summary returned to the parent.", min=200)
    compression_threshold_tokens: int = setting(
        0, "Lower compaction trigger for children only; effective at >= 16000; 0 = off.", min=0, lenient=True
    )
    gateway_mode: Literal["auto", "inline", "background", "async"] = setting(
        "auto", "How gateway sessions delegate: auto, inline or background (alias async)."
    )
    stale_between_turns_seconds: float = setting(
        450.0, "A child with no progress this long between model turns is stalled.", min=0.001
    )
    stale_in_tool_seconds: float = setting(
        1200.0, "A child with no progress this long inside one tool is stalled.", min=0.001
    )
    heartbeat_interval_seconds: float = setting(5.0, "How often the liveness monitor looks at children.", min=0.001)
    backend: str = setting(
        "default", "How tasks are routed: default (the child model above), model_map or profile_routes (both from"
        " the advanced_delegation plugin), or a backend another plugin registers; a chat may switch with /delegation."
    )
    model_map: Mapping[str, ModelRoute] = nested(
        _no_routes, "model_map options by name: each {description, provider, model, base_url?, api_key?}."
    )
    profile_routes: Mapping[str, ProfileRoute] = nested(
        _no_routes, "profile_routes profiles by name: a model and credentials, a persona, context files, toolsets."
    )


@dataclass(frozen=True, slots=True)
class TemporalTLSSettings:
    # Each file is relative to the config file (the loader resolves it), as state_dir is.
    ca_file: Path | None = setting(
        None, "PEM file of the CA that signed the server's certificate, relative to the config file; the system's"
        " CAs when unset."
    )
    cert_file: Path | None = setting(None, "Client certificate (PEM) for mutual TLS, relative to the config file;"
                                     " needs key_file.")
    key_file: Path | None = setting(None, "Private key (PEM) of cert_file, relative to the config file.")
    server_name: str | None = setting(None, "Name the server's certificate must carry; the address's host when unset.")


@dataclass(frozen=True, slots=True)
class TemporalSettings:
    address: str = setting("127.0.0.1:7233", "host:port of the Temporal frontend.")
    namespace: str = setting("default", "Temporal namespace the children's workflows run in.")
    task_queue: str = setting("switchboard-children", "Task queue the gateway launches children on and workers poll.")
    tls: bool | TemporalTLSSettings | None = setting(
        None, "false: plaintext; true: TLS with the system's CAs; a mapping (ca_file, cert_file, key_file,"
        " server_name) for a private CA or mutual TLS. Unset: TLS exactly when api_key is set."
    )
    api_key: str | None = setting(None, "API key (sent as a bearer token), e.g. ${TEMPORAL_API_KEY}.", secret=True)


@dataclass(frozen=True, slots=True)
class LifecycleSettings:
    engine: Literal["inprocess", "temporal"] = setting(
        "inprocess", "Engine that runs children: inprocess (in the gateway) or temporal (on `switchboard worker`"
        " processes, see docs/scale-out.md)."
    )
    max_running: int = setting(
        10, "Children running at once in the in-process engine (others wait in PENDING); with temporal, the model"
        " and tool calls one worker runs at once.", min=1
    )
    retention_seconds: float = setting(3600.0, "How long finished records stay readable.", min=0)
    sweep_interval_seconds: float = setting(60.0, "How often expired records are swept.", min=0.01)
    on_restart: Literal["report", "resume"] = setting(
        "report", "Background children a restart interrupted: report them to their chat (and /retry runs them"
        " again), or resume them at once."
    )
    max_attempts: int = setting(
        3, "With on_restart: resume, how many times a child is run in all before it is reported as lost.", min=1
    )
    temporal: TemporalSettings = nested(TemporalSettings, "The Temporal service, for engine: temporal.")
