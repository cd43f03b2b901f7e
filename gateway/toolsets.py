"""Which toolsets a parent session gets, by platform: safe by default on chat platforms.

Anyone allowed to talk to a bot on Telegram, Slack, Discord, a webhook route or the web
chat can make the model call its tools. The toolsets that act on the gateway's machine —
``execute_code`` (run Python as the gateway's user) and ``file`` (which includes
``write_file``) — are therefore off on those platforms unless the operator turns
them on: ``platforms.<p>.toolsets`` for one platform, else ``agent.toolsets`` for
all of them. The terminal (``switchboard chat``) and ``switchboard ask`` are the
operator's own and get every toolset. ``agent.enabled_toolsets`` and
``agent.disabled_tools`` restrict every session on top of this.

The result is the session's ``enabled_toolsets``: the children it starts inherit
it and can only narrow it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import get_args

from agent.settings import GatedToolset
from gateway.config import Config

GATED = frozenset(get_args(GatedToolset))
OPERATOR = frozenset({"local"})
"""Platforms where the person typing is the operator."""


def session_toolsets(config: Config, registered: Iterable[str], platform: str | None) -> frozenset[str] | None:
    """The toolsets a parent session on ``platform`` may use; None means all of them.
    ``registered`` is every toolset there is; ``platform`` None is the operator (``ask``)."""
    enabled = frozenset(config.agent.enabled_toolsets) if config.agent.enabled_toolsets is not None else None
    if platform is None or platform in OPERATOR:
        return enabled
    settings = getattr(config.platforms, platform, None)
    chosen = getattr(settings, "toolsets", None)
    allowed = frozenset(chosen if chosen is not None else config.agent.toolsets)
    base = enabled if enabled is not None else frozenset(registered)
    return frozenset(t for t in base if t not in GATED or t in allowed)
