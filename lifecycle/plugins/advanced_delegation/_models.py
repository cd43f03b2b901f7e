"""The models behind routes: built from a route's settings on first use, with credentials that
never travel to a server they were not configured for."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from agent import Model
from agent.models.factory import build_model
from agent.settings import ModelSettings

log = logging.getLogger("lifecycle.plugins.advanced_delegation")


def route_settings(base: ModelSettings, *, provider: str | None, model: str | None, base_url: str | None,
                   api_key: str | None) -> ModelSettings:
    """The parent's model settings with the route's provider, model and endpoint.

    A route without ``base_url`` on the parent's provider talks to the parent's server and
    so may use the parent's key; a route on another server gets only its own ``api_key``
    (the provider may still read ``$OPENAI_API_KEY``), never the parent's."""
    provider = provider or base.provider
    same_server = base_url is None and provider == base.provider
    return dataclasses.replace(
        base,
        provider=provider,
        name=model or base.name,
        base_url=base_url if base_url is not None else (base.base_url if same_server else None),
        api_key=api_key if api_key is not None else (base.api_key if same_server else None),
    )


class RouteModels:
    """One model per route name, built when first routed to and closed with the backend."""

    def __init__(self) -> None:
        self._models: dict[str, Model] = {}

    def get(self, route: str, settings: ModelSettings) -> Model:
        model = self._models.get(route)
        if model is None:
            model = self._models[route] = build_model(settings)
            log.info("route %s uses a %s model", route, settings.provider)
        return model

    async def aclose(self) -> None:
        """Close every route's model: one that fails to close is logged, and the rest are still closed."""
        models, self._models = self._models, {}
        for route, model in models.items():
            aclose: Any = getattr(model, "aclose", None)
            if aclose is None:
                continue
            try:
                await aclose()
            except Exception:
                log.exception("closing route %s's model failed", route)
