"""Adapters built from configuration. Each SDK is imported only when its platform is enabled."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gateway.config import Config
from platforms.base import Adapter


def build_adapters(config: Config, *, local: bool = False, on_local_exit: Callable[[], object] | None = None,
                   on_local_input_end: Callable[[], object] | None = None,
                   local_busy: Callable[[], bool] | None = None,
                   local_mode: Callable[[], str | None] = lambda: None,
                   local_port: Callable[[], int | None] = lambda: None) -> list[Adapter]:
    """The enabled platforms' adapters; ``local`` adds the terminal (``switchboard chat``),
    which calls ``on_local_exit`` when the person leaves it, ``on_local_input_end`` when
    input piped to it runs out, asks ``local_busy`` whether a turn runs (Ctrl-C stops it), and,
    as it starts, ``local_mode`` for the delegation mode its chat's session is pinned to (None for none yet)
    and ``local_port`` for the port the HTTP server listens on (None when none runs)."""
    p = config.platforms
    adapters: list[Adapter] = []
    if local:
        from gateway.chat_intro import chat_intro
        from platforms.local import LocalAdapter

        adapters.append(LocalAdapter(on_exit=on_local_exit, on_input_end=on_local_input_end,
                                     greeting=lambda: chat_intro(config, local_mode(), local_port()),
                                     files_dir=Path(config.state_dir) / "sent-files", busy=local_busy))
    if p.webhook.enabled:
        from gateway.store.outbox_rows import RETENTION_SECONDS
        from platforms.webhook import WebhookAdapter

        routes = {name: (route.secret, route.deliver_url, route.previous_secret)
                  for name, route in p.webhook.routes.items()}
        # A sent file downloads as long as its turn can be read: the outbox keeps it that long.
        adapters.append(WebhookAdapter(routes, retry_for_seconds=p.webhook.retry_for_seconds,
                                       files_dir=Path(config.state_dir) / "webhook-files",
                                       keep_files_seconds=RETENTION_SECONDS))
    if p.telegram.enabled:
        from platforms.telegram import TelegramAdapter

        adapters.append(TelegramAdapter(
            p.telegram.token, api_base=p.telegram.api_base, mode=p.telegram.mode,
            webhook_url=p.telegram.webhook_url, webhook_secret=p.telegram.webhook_secret,
            max_attachment_bytes=p.telegram.max_attachment_bytes,
        ))
    if p.slack.enabled:
        from platforms.slack import SlackAdapter
        from platforms.slack_catchup import Limits

        adapters.append(SlackAdapter(
            bot_token=p.slack.bot_token, mode=p.slack.mode, app_token=p.slack.app_token,
            signing_secret=p.slack.signing_secret, api_base=p.slack.api_base,
            max_attachment_bytes=p.slack.max_attachment_bytes,
            catch_up=Limits(max_retry_after=config.delivery.max_retry_after),
        ))
    if p.discord.enabled:
        from platforms.discord import DiscordAdapter

        adapters.append(DiscordAdapter(
            p.discord.token, api_base=p.discord.api_base, gateway_url=p.discord.gateway_url,
            command_guilds=p.discord.command_guilds, max_attachment_bytes=p.discord.max_attachment_bytes,
            max_retry_after=config.delivery.max_retry_after,
        ))
    if p.web.enabled:
        from gateway.store.outbox_rows import RETENTION_SECONDS
        from platforms.web import WebChatAdapter

        adapters.append(WebChatAdapter(
            token=p.web.token, user_header=p.web.user_header, allowed_users=p.web.allowed_users,
            allow_all=p.web.allow_all, trusted_proxies=p.web.trusted_proxies, history_limit=p.web.history_limit,
            # A sent file's link works as long as its message shows: the outbox keeps it that long.
            files_dir=Path(config.state_dir) / "web-files", keep_files_seconds=RETENTION_SECONDS,
        ))
    return adapters
