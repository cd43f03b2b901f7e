"""Display settings and delegation mode, resolved the way the design map describes.

For platform ``p`` and key ``k`` the first value that is set wins:
``display.platforms.<p>.<k>`` → ``display.<k>`` → the adapter's built-in tier →
the global default. The webhook platform never sends interim messages, nor a progress card,
and at most one notice a turn (`NO_EDITS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gateway.config import Config
from platforms.base import DisplayTier

GLOBAL_DEFAULTS = {"interim_assistant_messages": False, "long_running_notifications": True, "progress": "off"}
ALWAYS_BACKGROUND = frozenset({"web", "local", "webhook"})
NO_EDITS = frozenset({"webhook"})
"""Platforms that cannot change what they sent: each update of a notice, and its outcome, would be one
more delivery (the last after the answer). A turn there gets at most its first notice, and no card."""
NO_INTERIM = frozenset({"webhook"})
"""Platforms that never show an interim message, whatever ``interim_assistant_messages`` says: a delivery
there is the turn's answer."""

Mode = Literal["inline", "background"]


@dataclass(frozen=True, slots=True)
class TurnDisplay:
    """Settings resolved for one turn."""

    interim_assistant_messages: bool
    long_running_notifications: bool | Literal["generic"]
    notify_interval: float
    busy_input_mode: str
    progress: str
    """``card``: one live progress card per turn; ``off``: long-running notices only."""
    progress_delay: float
    progress_final: str
    """``summary``: a finished turn's notice or card is edited to its outcome; ``delete``: it is deleted."""
    edits: bool = True
    """False on `NO_EDITS` platforms: a notice is sent once and left as it is."""


def resolve(config: Config, platform: str, key: str, tier: DisplayTier | None):
    overrides = config.display.platforms.get(platform)
    for value in (
        getattr(overrides, key, None) if overrides is not None else None,
        getattr(config.display, key, None),
        getattr(tier, key, None) if tier is not None else None,
    ):
        if value is not None:
            return value
    return GLOBAL_DEFAULTS[key]


def turn_display(config: Config, platform: str, tier: DisplayTier | None) -> TurnDisplay:
    interim = bool(resolve(config, platform, "interim_assistant_messages", tier)) and platform not in NO_INTERIM
    overrides = config.display.platforms.get(platform)
    busy = (overrides.busy_input_mode if overrides is not None else None) or config.display.busy_input_mode
    final = (overrides.progress_final if overrides is not None else None) or config.display.progress_final
    delay = overrides.progress_delay if overrides is not None and overrides.progress_delay is not None else None
    return TurnDisplay(
        interim_assistant_messages=interim,
        long_running_notifications=resolve(config, platform, "long_running_notifications", tier),
        notify_interval=config.agent.gateway_notify_interval,
        busy_input_mode=busy,
        progress="off" if platform in NO_EDITS else resolve(config, platform, "progress", tier),
        progress_delay=config.display.progress_delay if delay is None else delay,
        progress_final=final,
        edits=platform not in NO_EDITS,
    )


def delegation_mode(config: Config, platform: str, tier: DisplayTier | None) -> Mode:
    """The mode a new session is pinned to (until ``/new``)."""
    mode = config.delegation.gateway_mode
    if mode in ("background", "async"):
        return "background"
    if mode == "inline":
        return "inline"
    messaging = tier is not None and tier.messaging and platform not in ALWAYS_BACKGROUND
    interim = turn_display(config, platform, tier).interim_assistant_messages
    return "inline" if messaging and not interim else "background"


class DisplayResolver:
    """The resolution above for the gateway's adapters, whose tiers are fixed at start."""

    def __init__(self, config: Config, tiers: dict[str, DisplayTier]) -> None:
        self._config = config
        self._tiers = tiers
        self._turns: dict[str, TurnDisplay] = {}
        """Resolved once per platform: the config and the tiers never change, and every turn asks."""

    def turn(self, platform: str) -> TurnDisplay:
        display = self._turns.get(platform)
        if display is None:
            display = self._turns[platform] = turn_display(self._config, platform, self._tiers.get(platform))
        return display

    def mode(self, platform: str) -> Mode:
        return delegation_mode(self._config, platform, self._tiers.get(platform))
