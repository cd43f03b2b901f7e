"""Checks of the delegation backends' settings, so a backend that is missing or invalid stops
``config check`` and the start instead of failing a user's first delegation.

``delegation.model_map`` and ``delegation.profile_routes`` are checked whenever they have
entries (a chat may switch to them with ``/delegation``). ``delegation.backend`` must be a
backend's name; ``model_map`` and ``profile_routes`` must be there (their plugin enabled, an
entry set). Any other plugin's backend is known only once the plugins have loaded: the start
checks it then.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from agent._plugins import BACKEND_NAME
from gateway.config.premises import Finding
from gateway.config.sections import Config
from gateway.config.shown import key_part
from lifecycle.plugins.advanced_delegation import profile_problems

PLUGIN = "advanced_delegation"
BUNDLED_PLUGINS = {PLUGIN: "lifecycle.plugins.advanced_delegation"}
"""Short names of the plugins that ship with Switchboard, and their import paths."""
BUNDLED_BACKENDS = ("model_map", "profile_routes")
"""The backends the bundled plugin provides, checkable before any plugin loads."""

ROUTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MAX_FILE_CHARS = 32_000


def plugin_enabled(config: Config) -> bool:
    return PLUGIN in config.plugins or BUNDLED_PLUGINS[PLUGIN] in config.plugins


def backend_problem(config: Config) -> str:
    """Why ``delegation.backend`` would not be available, in words; "" when nothing is known wrong.
    Of another plugin's backend only that it must be registered: the start asks this once it has
    found it missing, `delegation_rules` only of the bundled backends."""
    backend = config.delegation.backend
    if backend == "default":
        return ""
    if backend not in BUNDLED_BACKENDS:
        return "no plugin in plugins registered a delegation backend of that name"
    if not plugin_enabled(config):
        return f"it is provided by the {PLUGIN} plugin: add {PLUGIN} to plugins"
    if not getattr(config.delegation, backend):
        return f"delegation.{backend} has no entries: add at least one"
    return ""


def delegation_rules(config: Config, source: Path | None) -> tuple[list[str], list[str]]:
    """``(errors, warnings)`` about delegation backends; file paths are relative to ``source``'s directory."""
    errors: list[str] = []
    warnings: list[str] = []
    delegation = config.delegation
    backend_missing = backend_problem(config) if delegation.backend in BUNDLED_BACKENDS else ""
    if not BACKEND_NAME.fullmatch(delegation.backend):
        errors.append(f'delegation.backend: "{delegation.backend}" is not a backend name: a lower-case word'
                      " (a-z, 0-9, _, starting with a letter; at most 40 characters)")
    elif backend_missing:
        errors.append(Finding(f'delegation.backend: "{delegation.backend}" is not available: {backend_missing}',
                              # the plugin's absence, or else the backend's empty entries: not the other
                              [f"delegation.{delegation.backend}"] if plugin_enabled(config) else ["plugins"]))
    root = source.parent if source is not None else Path.cwd()
    for name, option in delegation.model_map.items():
        where = f"delegation.model_map.{key_part(name)}"
        _check_name(where, name, errors)
        for key in ("description", "provider", "model"):
            if getattr(option, key) in (None, ""):
                errors.append(f"{where}.{key}: required (each option is {{description, provider, model, base_url?,"
                              " api_key?})")
        # As for a profile (`profile_problems`): the operator believes the option reaches a server it never asks.
        if option.provider not in (None, "", "openai"):
            errors.extend(f"{where}.{key}: not used by the {option.provider} provider (only openai reads it): set"
                          f" provider: openai or remove {key}" for key in ("base_url", "api_key")
                          if getattr(option, key) not in (None, ""))
    for name, profile in delegation.profile_routes.items():
        where = f"delegation.profile_routes.{key_part(name)}"
        _check_name(where, name, errors)
        if profile.description in (None, ""):
            errors.append(f"{where}.description: required (the parent model chooses a profile by it)")
        errors.extend(profile_problems(where, profile, config.model.provider))
        for i, path in enumerate(profile.context_files):
            if problem := _file_problem(path if path.is_absolute() else root / path):
                errors.append(f"{where}.context_files[{i}]: {problem}")
    if (delegation.model_map or delegation.profile_routes) and not plugin_enabled(config) and not backend_missing:
        warnings.append(Finding(f"delegation: model_map or profile_routes are set but the {PLUGIN} plugin is not in"
                                " plugins, so no chat can use them", ["plugins"]))
    return errors, warnings


def absolute_context_files(config: Config, source: Path | None) -> Config:
    """``config`` with each profile's relative context files made absolute (relative to the config file)."""
    profiles = config.delegation.profile_routes
    if source is None or not any(not p.is_absolute() for prof in profiles.values() for p in prof.context_files):
        return config
    root = source.parent
    fixed = {name: dataclasses.replace(prof, context_files=tuple(p if p.is_absolute() else root / p
                                                                 for p in prof.context_files))
             for name, prof in profiles.items()}
    delegation = dataclasses.replace(config.delegation, profile_routes=type(profiles)(fixed))
    return dataclasses.replace(config, delegation=delegation)


def _check_name(where: str, name: str, errors: list[str]) -> None:
    if not ROUTE_NAME.fullmatch(name):
        errors.append(f"{where}: the name must be a short word (letters, digits, _ . -): the model types it as a route")


def _file_problem(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        return f"cannot read {path} ({reason})"
    if len(text) > MAX_FILE_CHARS:
        return f"{path} has {len(text)} characters; at most {MAX_FILE_CHARS}"
    return None
