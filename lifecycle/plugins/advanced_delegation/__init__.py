"""``advanced_delegation``: the ``model_map`` and ``profile_routes`` delegation backends.

Enable it with ``plugins: [advanced_delegation]`` (or its full import path,
``lifecycle.plugins.advanced_delegation``); it registers a backend for each of
``delegation.model_map`` and ``delegation.profile_routes`` that has entries, and
``delegation.backend`` (or a chat's ``/delegation``) picks one. The parent model
sees only each option's name and description. See docs/delegation.md.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from lifecycle.plugins.advanced_delegation._backends import ModelMapBackend, ProfileRoutesBackend, profile_problems

log = logging.getLogger("lifecycle.plugins.advanced_delegation")

__all__ = ["ModelMapBackend", "ProfileRoutesBackend", "profile_problems", "register"]


def register(ctx: Any) -> None:
    config = ctx.config
    if config is None:
        raise ValueError("advanced_delegation needs the host's configuration (delegation.model_map / profile_routes)")
    delegation = config.delegation
    source = getattr(config, "source", None)
    root = Path(source).parent if source is not None else Path.cwd()
    if delegation.model_map:
        ctx.register_delegation_backend(ModelMapBackend(delegation.model_map, config.model))
    if delegation.profile_routes:
        ctx.register_delegation_backend(ProfileRoutesBackend(delegation.profile_routes, config.model, root))
    if not delegation.model_map and not delegation.profile_routes:
        log.warning("advanced_delegation: delegation.model_map and delegation.profile_routes are both empty;"
                    " it adds no backend")
