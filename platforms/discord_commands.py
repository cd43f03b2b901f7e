"""Slash commands on Discord: registered at start, and the `Inbound` each use becomes.

Each `CommandSpec` becomes a slash command with one optional ``args`` string,
registered by bulk overwrite in every guild of ``command_guilds`` (instant) or
globally when that is empty. An interaction is deferred (type 5, "thinking…")
before it is handed over, so Discord's 3-second window holds whatever the
gateway does; its ``reply_token`` is ``"<application id>:<interaction token>"``
(valid 15 minutes). Answering it stays with the adapter's sending (`platforms.discord`).

Apart from the adapter because commands come outside the channels' messages: no mention, no
catch-up, their own acknowledgement. Logged under ``platforms.discord``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from platforms.base import CommandSpec, Inbound
from platforms.discord_errors import translate
from platforms.discord_inbound import chat_of, handle
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning

log = logging.getLogger("platforms.discord")

OnCommand = Callable[[discord.Interaction, str, "str | None"], Awaitable[None]]
"""The adapter's handler of one command: ``(interaction, command name, args)``."""


def command_tree(client: discord.Client, commands: Sequence[CommandSpec], guild_ids: Sequence[int],
                 on_command: OnCommand) -> discord.app_commands.CommandTree:
    """A slash command per `CommandSpec`, in every guild of ``guild_ids`` (global when empty)."""
    tree = discord.app_commands.CommandTree(client)
    guilds = [discord.Object(id=g) for g in guild_ids]
    for spec in commands:
        try:
            tree.add_command(slash_command(spec, on_command), guilds=guilds)
        except (ValueError, TypeError, discord.app_commands.AppCommandError) as exc:
            log.error("discord: cannot register /%s: %s", spec.name, exc)
    return tree


def slash_command(spec: CommandSpec, on_command: OnCommand) -> discord.app_commands.Command[Any, ..., None]:
    async def callback(interaction: discord.Interaction, args: str | None = None) -> None:
        await on_command(interaction, spec.name, args)

    callback = discord.app_commands.describe(args="Optional arguments")(callback)
    return discord.app_commands.Command(name=spec.name, description=(spec.description or spec.name)[:100],
                                        callback=callback)


async def sync(tree: discord.app_commands.CommandTree, guild_ids: Sequence[int]) -> None:
    """Register the tree's commands by bulk overwrite; a failure is logged, not raised."""
    scopes = [discord.Object(id=g) for g in guild_ids] or [None]
    for guild in scopes:
        scope = "commands" if guild is None else "guilds/{guild_id}/commands"
        route = "PUT /applications/{application_id}/" + scope
        try:
            await tree.sync(guild=guild)
        except Exception as exc:  # commands are a convenience: `!stop` text still works
            error = translate(exc, route=route, chat_id=str(guild.id) if guild else "global")
            log.error("discord: slash commands not registered (%s); invite the bot with the "
                      "applications.commands scope", error)


async def received(interaction: discord.Interaction, name: str, args: str | None, *,
                   deferred: Callable[[str], None]) -> Inbound:
    """The command as the gateway takes it, once deferred (``deferred`` is told its reply token); one
    that could not be deferred goes without a reply token, to be answered in the channel."""
    reply_token: str | None = f"{interaction.application_id}:{interaction.token}"
    try:
        await interaction.response.defer(thinking=True)
        deferred(reply_token)
    except Exception as exc:  # too late, already answered, or rate limited: run it, answer in the channel
        error = translate(exc, route="POST /interactions/{id}/{token}/callback", chat_id=str(interaction.channel_id))
        log.warning("discord: could not acknowledge /%s from user %s (%s); answering in the channel instead",
                    name, interaction.user.id, type(error).__name__)
        reply_token = None
    chat_id, thread_id = chat_of(interaction.channel, interaction.channel_id)
    return Inbound(
        platform="discord", chat_id=chat_id, thread_id=thread_id, user_id=str(interaction.user.id),
        user_name=handle(interaction.user), text=f"/{name} {args or ''}".strip(),
        event_id=str(interaction.id), is_command=True, is_private=interaction.guild_id is None,
        reply_token=reply_token,
    )
