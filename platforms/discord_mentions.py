"""Mentions in what someone wrote on Discord (``<@456>``, ``<@&321>``, ``<#789>``), read by name, as Discord shows
them: the model cannot tell whom or what an id is. One set of rules for a message (`platforms.discord_inbound`) and
a slash command's text (`platforms.discord_commands`), so that a plugin's command reads alike typed as ``!cmd`` or
used as ``/cmd``; each hands in whom and what its own payload names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning

Names = Callable[[int], str | None]
"""A user's, role's or channel's name by its id; None for one not known."""

_MENTION = re.compile(r"<(@[!&]?|#)([0-9]{1,20})>")
"""A mention as Discord reads one: an id of ASCII digits, at most 20 (a snowflake). More stays as written: read as a
number, past 4,300 digits Python refuses it (ValueError), and a slash command's text holds 6,000 characters."""
_AS_WRITTEN = re.compile(r"(\\[^0-9A-Za-z\s]|```.*?```|``.+?``|`[^`]+`)", re.DOTALL)
"""Where Discord shows a mention's syntax as written: a backslash escape (``\\<@456>``, what its client writes for
``\\@bob``; an escaped backtick opens no code), a code block or span."""


def named(text: str, users: Names, roles: Names, channels: Names) -> str:
    """``text`` with each mention read as Discord shows it: a user as ``@`` and the name `user_name` gives, a role
    as ``@`` and its name (the server's ``@everyone`` role, named so already, as ``@everyone``), a channel or thread
    as ``#`` and its name. One the lookups do not know stays as written, and so does one in code
    (`` `<@&123>` ``) or escaped (``\\<@&123>``), as Discord shows it. ``@everyone`` and ``@here`` are words here:
    nothing a reply says pings (``allowed_mentions``)."""

    def name(match: re.Match[str]) -> str:
        kind, id_ = match[1], int(match[2])
        if kind == "#":
            return f"#{found}" if (found := channels(id_)) is not None else match[0]
        if kind == "@&":
            return "@" + found.removeprefix("@") if (found := roles(id_)) is not None else match[0]
        return f"@{found}" if (found := users(id_)) is not None else match[0]

    # Split on a pattern of one group, what shows as written is every second part.
    return "".join(part if i % 2 else _MENTION.sub(name, part) for i, part in enumerate(_AS_WRITTEN.split(text)))


def user_name(username: str, discriminator: str | None) -> str:
    """A user as the model reads them: their username, which no one else holds, never their display name or
    nickname, which anyone may set to another member's name; ``name#1234`` for an account still on a
    discriminator (bots are), as discord.py writes a user."""
    return username if discriminator in (None, "0") else f"{username}#{discriminator}"


def in_command(text: str, interaction: discord.Interaction) -> str:
    """A slash command's text (its string option) with its mentions read as a message's are (`named`), by the
    names Discord sends with the interaction (its data's ``resolved``: the users, roles and channels the text
    mentions). One it did not resolve stays as written."""
    resolved: Mapping[str, Any] = (interaction.data or {}).get("resolved") or {}
    users, roles, channels = (resolved.get(kind) or {} for kind in ("users", "roles", "channels"))

    def user(id_: int) -> str | None:
        data = users.get(str(id_))
        return user_name(data["username"], data.get("discriminator")) if data and data.get("username") else None

    def name_of(found: Mapping[str, Any]) -> Names:
        return lambda id_: (found.get(str(id_)) or {}).get("name")

    return named(text, user, name_of(roles), name_of(channels))
