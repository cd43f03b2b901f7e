"""Display settings resolved for each real adapter, level by level: ``display.platforms.<p>.<k>`` →
``display.<k>`` → the adapter's tier → the global default; and the delegation mode ``auto`` pins."""

from __future__ import annotations

import pytest

from gateway.display import DisplayResolver
from gateway.testing import make_config
from platforms.discord import DiscordAdapter
from platforms.local import LocalAdapter
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter
from platforms.web import WebChatAdapter
from platforms.webhook import WebhookAdapter

ADAPTERS = (TelegramAdapter, SlackAdapter, DiscordAdapter, WebChatAdapter, WebhookAdapter, LocalAdapter)
TIERS = {a.name: a.tier for a in ADAPTERS}
MESSAGING = {"telegram", "slack", "discord"}
KEYS = ("interim_assistant_messages", "long_running_notifications", "progress", "busy_input_mode",
        "progress_delay", "progress_final")

GLOBAL = {"interim_assistant_messages": False, "long_running_notifications": "generic", "progress": "card",
          "busy_input_mode": "queue", "progress_delay": 5.0, "progress_final": "delete"}
OWN = {"interim_assistant_messages": True, "long_running_notifications": False, "progress": "off",
       "busy_input_mode": "steer", "progress_delay": 0.0, "progress_final": "summary"}
"""Falsy values on purpose: an override of ``false`` or ``0`` is set, not "ask the next level"."""
OTHER = {"interim_assistant_messages": False, "long_running_notifications": "generic", "progress": "card",
         "busy_input_mode": "queue", "progress_delay": 9.0, "progress_final": "delete"}

TIER_VALUES = {  # the adapters' built-in tiers; the last three keys have none, so their global defaults
    "telegram": (True, True, "card", "interrupt", 2.0, "summary"),
    "slack": (True, True, "card", "interrupt", 2.0, "summary"),
    "discord": (True, True, "card", "interrupt", 2.0, "summary"),
    "web": (True, True, "off", "interrupt", 2.0, "summary"),
    "webhook": (False, False, "off", "interrupt", 2.0, "summary"),
    "local": (True, True, "off", "interrupt", 2.0, "summary"),
}
WEBHOOK_FORCED = {"interim_assistant_messages": False, "progress": "off"}
"""Whatever the config says: a webhook delivery cannot be edited, nor does it take interim messages."""


def levels(platform: str, level: str) -> dict:
    """The ``display`` section that sets keys up to ``level``; another platform's override never counts."""
    other = "slack" if platform != "slack" else "telegram"
    section: dict = {"platforms": {other: OTHER}}
    if level in ("global", "own"):
        section.update(GLOBAL)
    if level == "own":
        section["platforms"][platform] = OWN
    return section


def expected(platform: str, level: str) -> dict:
    values = {"tier": dict(zip(KEYS, TIER_VALUES[platform])), "global": GLOBAL, "own": OWN}[level]
    return {**values, **(WEBHOOK_FORCED if platform == "webhook" else {})}


@pytest.mark.parametrize("level", ["tier", "global", "own"])
@pytest.mark.parametrize("platform", sorted(TIERS))
def test_each_key_resolves_at_the_first_level_set(tmp_path, platform, level):
    config = make_config(tmp_path, display=levels(platform, level))
    display = DisplayResolver(config, TIERS).turn(platform)
    assert {k: getattr(display, k) for k in KEYS} == expected(platform, level)
    assert display.edits is (platform != "webhook")


def test_a_platform_without_a_tier_gets_the_global_defaults(tmp_path):
    display = DisplayResolver(make_config(tmp_path), {}).turn("custom")
    assert (display.interim_assistant_messages, display.long_running_notifications, display.progress) == (
        False, True, "off")


@pytest.mark.parametrize("level", ["tier", "global", "own"])
@pytest.mark.parametrize("platform", sorted(TIERS))
def test_auto_delegates_inline_exactly_where_resolved_interim_is_off_on_messaging(tmp_path, platform, level):
    config = make_config(tmp_path, display=levels(platform, level))
    resolver = DisplayResolver(config, TIERS)
    inline = platform in MESSAGING and not resolver.turn(platform).interim_assistant_messages
    assert resolver.mode(platform) == ("inline" if inline else "background")
    assert inline is (platform in MESSAGING and level == "global")
