"""Typed settings of the platform adapters (`platforms.*`).

Frozen dataclasses only; the loader validates YAML against them (see
`agent.settings` for the field-metadata conventions). Every credential is marked
``secret=True`` so it is masked by `config check` and never echoed in errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from agent.settings import GatedToolset, nested, setting

UserId = int | str
_TOOLSETS_DOC = "Toolsets off by default that this platform gets (execute_code, file); agent.toolsets when unset."


def empty_mapping() -> Mapping:
    # dataclasses refuse unhashable defaults, so immutable mappings come from a factory.
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class WebhookRoute:
    secret: str | None = setting(None, "Shared secret that authenticates requests to this route.", secret=True)
    deliver_url: str | None = setting(None, "URL the route's replies are POSTed to; none when unset.")
    previous_secret: str | None = setting(
        None, "The secret being rotated out: requests signed with it are still accepted (deliveries are signed with"
        " secret only). Remove it once every caller signs with the new secret.", secret=True,
    )


@dataclass(frozen=True, slots=True)
class WebhookPlatformSettings:
    enabled: bool = setting(False, "Accept messages over HTTP webhooks.")
    routes: Mapping[str, WebhookRoute] = nested(empty_mapping, "Webhook routes by name.")
    retry_for_seconds: float = setting(3600.0, "How long a failed delivery to deliver_url is retried.", min=0)
    toolsets: tuple[GatedToolset, ...] | None = setting(None, _TOOLSETS_DOC)


@dataclass(frozen=True, slots=True)
class TelegramSettings:
    enabled: bool = setting(False, "Run the Telegram adapter.")
    token: str | None = setting(None, "Bot token from @BotFather.", secret=True)
    api_base: str = setting("https://api.telegram.org", "Bot API server (point it at a fake or local server).")
    mode: Literal["polling", "webhook"] = setting("polling", "Receive updates by long polling or by webhook.")
    webhook_url: str | None = setting(None, "Public URL Telegram posts updates to (webhook mode).")
    webhook_secret: str | None = setting(
        None, "Secret Telegram sends in X-Telegram-Bot-Api-Secret-Token (webhook mode).", secret=True
    )
    allowed_users: tuple[UserId, ...] = setting((), "User ids or usernames allowed to talk to the bot.")
    allow_all: bool = setting(False, "Let anyone talk to the bot (ignores allowed_users).")
    toolsets: tuple[GatedToolset, ...] | None = setting(None, _TOOLSETS_DOC)
    max_attachment_bytes: int = setting(
        20 * 1024 * 1024, "Largest file (photo, document, voice) downloaded from a message, in bytes; larger ones "
        "are refused with a message to the user.", min=1,
    )


@dataclass(frozen=True, slots=True)
class SlackSettings:
    enabled: bool = setting(False, "Run the Slack adapter.")
    mode: Literal["socket", "http"] = setting("socket", "Receive events over Socket Mode or HTTP.")
    bot_token: str | None = setting(None, "Bot token (xoxb-...).", secret=True)
    app_token: str | None = setting(None, "App-level token for Socket Mode (xapp-...).", secret=True)
    signing_secret: str | None = setting(None, "Signing secret that verifies HTTP events.", secret=True)
    api_base: str = setting("https://slack.com/api/", "Web API base URL (point it at a fake server in tests).")
    allowed_users: tuple[UserId, ...] = setting((), "Slack user ids allowed to talk to the bot.")
    allow_all: bool = setting(False, "Let anyone in the workspace talk to the bot.")
    toolsets: tuple[GatedToolset, ...] | None = setting(None, _TOOLSETS_DOC)
    max_attachment_bytes: int = setting(
        20 * 1024 * 1024, "Largest file (photo, document, voice) downloaded from a message, in bytes; larger ones "
        "are refused with a message to the user.", min=1,
    )


@dataclass(frozen=True, slots=True)
class DiscordSettings:
    enabled: bool = setting(False, "Run the Discord adapter.")
    token: str | None = setting(None, "Bot token.", secret=True)
    api_base: str = setting("https://discord.com/api/v10", "REST API base URL (point it at a fake server in tests).")
    gateway_url: str | None = setting(None, "Gateway WebSocket URL; the one the REST API names when unset.")
    command_guilds: tuple[int, ...] = setting((), "Guild ids to register slash commands in; global when empty.")
    allowed_users: tuple[UserId, ...] = setting(
        (), "Discord user ids, or usernames (never display names), allowed to talk to the bot.")
    allow_all: bool = setting(False, "Let anyone who can see the bot talk to it.")
    toolsets: tuple[GatedToolset, ...] | None = setting(None, _TOOLSETS_DOC)
    max_attachment_bytes: int = setting(
        20 * 1024 * 1024, "Largest file (photo, document, voice) downloaded from a message, in bytes; larger ones "
        "are refused with a message to the user.", min=1,
    )


@dataclass(frozen=True, slots=True)
class WebChatSettings:
    enabled: bool = setting(False, "Serve the web chat page at /chat on the HTTP server.")
    token: str | None = setting(
        None, "Token the page must send (Authorization: Bearer); required when server.host is not loopback,"
        " unless user_header and allowed_users are set.",
        secret=True,
    )
    user_header: str | None = setting(
        None, "Header a signing-in proxy sets to the user's name (e.g. X-Forwarded-User); requests without it are"
        " refused. Unset: one anonymous user, 'web'.",
    )
    allowed_users: tuple[UserId, ...] = setting((), "Users (as user_header names them) allowed to chat.")
    allow_all: bool = setting(False, "Let every user the proxy names chat (ignores allowed_users).")
    trusted_proxies: tuple[str, ...] = setting(
        (), "IP addresses or networks (10.0.0.5, 10.0.0.0/24) of the proxies that may set user_header: a request"
        " from any other is refused as one without it. Empty: the header is taken from anyone who reaches the port.")
    toolsets: tuple[GatedToolset, ...] | None = setting(None, _TOOLSETS_DOC)
    history_limit: int = setting(
        200, "Messages a page shows when it opens (the most recent); a page reconnecting after more than these "
        "gets every one since the newest it shows, up to 2,000.", min=1, max=10_000)


@dataclass(frozen=True, slots=True)
class PlatformsSettings:
    webhook: WebhookPlatformSettings = nested(WebhookPlatformSettings, "Generic HTTP webhooks.")
    telegram: TelegramSettings = nested(TelegramSettings, "Telegram (aiogram).")
    slack: SlackSettings = nested(SlackSettings, "Slack (slack-bolt).")
    discord: DiscordSettings = nested(DiscordSettings, "Discord (discord.py).")
    web: WebChatSettings = nested(WebChatSettings, "The web chat page (/chat).")


#: Every platform a display override may name: the configurable ones plus the terminal
#: (`switchboard chat`, which needs no settings of its own).
PLATFORM_NAMES: tuple[str, ...] = ("local", *PlatformsSettings.__dataclass_fields__)
