"""The two backends: ``model_map`` (a model per option) and ``profile_routes`` (a child runs as a
named profile: its model and credentials, persona, context files and toolsets)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agent.settings import ModelSettings
from lifecycle import ChildRoute, RouteOption, RouteRefused
from lifecycle.plugins.advanced_delegation._models import RouteModels, route_settings
from lifecycle.settings import ModelRoute, ProfileRoute

MAX_FILE_CHARS = 32_000
"""Characters of one context file a profile may give its children."""


def _required(where: str, **values: object) -> None:
    for key, value in values.items():
        if value in (None, ""):
            raise ValueError(f"{where}.{key}: required")


def profile_problems(where: str, profile: ProfileRoute, parent_provider: str) -> list[str]:
    """A profile's settings that would be accepted but not used, each naming its key.

    ``provider``, ``base_url`` and ``api_key`` describe the profile's own model: without
    ``model`` an ``api_key`` was silently dropped (the child ran on the default child model),
    and a ``provider`` or ``base_url`` sent the parent's model name to another provider or
    server. Only the openai provider reads ``base_url`` and ``api_key``."""
    problems = []
    has_model = profile.model not in (None, "")
    for key in ("provider", "base_url", "api_key"):
        if getattr(profile, key) not in (None, "") and not has_model:
            problems.append(f"{where}.{key}: needs model (provider, base_url and api_key describe the profile's own"
                            " model; without model the profile runs on the default child model): set model or remove"
                            f" {key}")
    provider = profile.provider or parent_provider
    if has_model and provider != "openai":
        for key in ("base_url", "api_key"):
            if getattr(profile, key) not in (None, ""):
                problems.append(f"{where}.{key}: not used by the {provider} provider (only openai reads it): set"
                                f" provider: openai or remove {key}")
    return problems


class ModelMapBackend:
    """``delegation.model_map``: each option names a model (and where and how to reach it)."""

    name = "model_map"
    description = "each task may pick a model by option"

    def __init__(self, options: Mapping[str, ModelRoute], parent_model: ModelSettings) -> None:
        for name, option in options.items():
            _required(f"delegation.model_map.{name}", description=option.description, provider=option.provider,
                      model=option.model)
        self._options = dict(options)
        self._settings = {
            name: route_settings(parent_model, provider=o.provider, model=o.model, base_url=o.base_url,
                                 api_key=o.api_key)
            for name, o in options.items()
        }
        self._models = RouteModels()

    def options(self) -> list[RouteOption]:
        return [RouteOption(name, o.description or "") for name, o in self._options.items()]

    def resolve(self, route: str) -> ChildRoute:
        if route not in self._settings:
            raise RouteRefused(f"no route {route!r}")
        return ChildRoute(route, model=self._models.get(route, self._settings[route]))

    async def aclose(self) -> None:
        await self._models.aclose()


class ProfileRoutesBackend:
    """``delegation.profile_routes``: a child routed to a profile runs as that profile. Context
    files are read once, when the plugin registers (a missing one stops the start)."""

    name = "profile_routes"
    description = "each task may run as a named profile"

    def __init__(self, profiles: Mapping[str, ProfileRoute], parent_model: ModelSettings, root: Path) -> None:
        self._profiles = dict(profiles)
        self._settings: dict[str, ModelSettings | None] = {}
        self._context: dict[str, str] = {}
        for name, profile in profiles.items():
            where = f"delegation.profile_routes.{name}"
            _required(where, description=profile.description)
            if problems := profile_problems(where, profile, parent_model.provider):
                raise ValueError(problems[0])
            if profile.model not in (None, ""):
                self._settings[name] = route_settings(parent_model, provider=profile.provider, model=profile.model,
                                                      base_url=profile.base_url, api_key=profile.api_key)
            else:
                self._settings[name] = None  # the default child model
            self._context[name] = _read_files(where, name, profile.context_files, root)
        self._models = RouteModels()

    def options(self) -> list[RouteOption]:
        return [RouteOption(name, p.description or "") for name, p in self._profiles.items()]

    def resolve(self, route: str) -> ChildRoute:
        profile = self._profiles.get(route)
        if profile is None:
            raise RouteRefused(f"no route {route!r}")
        settings = self._settings[route]
        return ChildRoute(
            route,
            model=None if settings is None else self._models.get(route, settings),
            system_prompt=profile.system_prompt or None,
            context=self._context[route],
            toolsets=profile.toolsets,
        )

    async def aclose(self) -> None:
        await self._models.aclose()


def _read_files(where: str, profile: str, paths: tuple[Path, ...], root: Path) -> str:
    """The files' text as one prompt section; raises ValueError naming the key of a file that
    cannot be read or is too long."""
    parts = []
    for i, path in enumerate(paths):
        full = path if path.is_absolute() else root / path
        try:
            text = full.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise ValueError(f"{where}.context_files[{i}]: cannot read {full} ({reason})") from None
        if len(text) > MAX_FILE_CHARS:
            raise ValueError(f"{where}.context_files[{i}]: {full} has {len(text)} characters; at most {MAX_FILE_CHARS}")
        parts.append(f"--- {full.name} ---\n{text.strip()}")
    if not parts:
        return ""
    return f"SKILLS AND CONTEXT OF THE {profile.upper()} PROFILE:\n" + "\n\n".join(parts)
