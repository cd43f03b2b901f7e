"""Checks across fields, run after every field is valid on its own.

These catch the mistakes that would otherwise surface only when an adapter
starts (a missing token) or never (a bot nobody may talk to).
"""

from __future__ import annotations

import re

from yarl import URL

from gateway.config.sections import Config

_TOKEN_PATH = re.compile(r"/bot\d+:")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def check_rules(config: Config) -> tuple[list[str], list[str]]:
    """``(errors, warnings)`` about combinations of settings."""
    errors: list[str] = []
    warnings: list[str] = []

    def require(platform: str, key: str, why: str) -> None:
        if not getattr(getattr(config.platforms, platform), key):
            errors.append(f"platforms.{platform}.{key}: required {why}")

    telegram, slack, discord = config.platforms.telegram, config.platforms.slack, config.platforms.discord
    if telegram.enabled:
        require("telegram", "token", "when platforms.telegram.enabled is true")
        if telegram.mode == "webhook":
            require("telegram", "webhook_url", 'when platforms.telegram.mode is "webhook"')
    if slack.enabled:
        require("slack", "bot_token", "when platforms.slack.enabled is true")
        if slack.mode == "socket":
            require("slack", "app_token", 'when platforms.slack.mode is "socket"')
        else:
            require("slack", "signing_secret", 'when platforms.slack.mode is "http"')
    if discord.enabled:
        require("discord", "token", "when platforms.discord.enabled is true")
    webhook = config.platforms.webhook
    if webhook.enabled:
        for name, route in webhook.routes.items():
            if not route.secret:
                errors.append(f"platforms.webhook.routes.{name}.secret: required (requests are signed with it)")
        if not webhook.routes:
            warnings.append("platforms.webhook: enabled with no routes, so no webhook can reach the gateway")

    for name, platform in (("telegram", telegram), ("slack", slack), ("discord", discord)):
        if platform.enabled and (problem := _url_problem(platform.api_base)):
            errors.append(f"platforms.{name}.api_base: {problem}")
        if platform.enabled and not platform.allowed_users and not platform.allow_all:
            warnings.append(
                f"platforms.{name}: enabled with no allowed_users and allow_all false, so nobody may talk to the bot"
            )

    for i, module in enumerate(config.plugins):
        if not _MODULE.fullmatch(module):
            errors.append(f'plugins[{i}]: expected an importable module name such as "my_plugins.weather", got "{module}"')
    return errors, warnings


def _url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an API base URL, without echoing it (it may hold a token)."""
    try:
        parsed = URL(url)
    except ValueError:
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
        return "expected an http(s) URL such as https://api.example.com (the scheme is missing or wrong)"
    if _TOKEN_PATH.search(parsed.path):
        return "give the server's base URL only, without /bot<token>: the token goes in platforms.telegram.token"
    return None
