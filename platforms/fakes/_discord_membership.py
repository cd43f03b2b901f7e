"""The fake Discord's account of where the bot may still write: servers it was removed from, DMs whose user blocked
it, private threads it was removed from (unless it manages threads there), and servers in an outage, announced on the
gateway as Discord announces them, and their writes refused with Discord's codes."""

from __future__ import annotations

from aiohttp import web

from platforms.fakes._discord_rest import _error

MISSING_ACCESS = 50001
CANNOT_MESSAGE_USER = 50007
ADMINISTRATOR, MANAGE_THREADS = 1 << 3, 1 << 34
"""Discord's permission bits that let the bot into every private thread (`manage_threads`, `make_admin`)."""


class DiscordMembership:
    """The membership half of `FakeDiscord`, which holds the state (``removed_guilds``, ``blocked_dms``,
    ``left_threads``, the ``denied`` permissions) and mixes this in."""

    def remove_bot(self, guild: str | int, *, update: bool = True) -> None:
        """The bot is kicked or banned from ``guild`` (or the server deleted): every call naming one of its channels
        or threads is refused 403 Missing Access (50001) until `add_bot`, a new session hears nothing of it, and
        the gateway sends ``GUILD_DELETE`` without ``unavailable``, as Discord does; with ``update`` False it does
        not, as for a removal while no session was valid (the gateway down, or re-identifying)."""
        guild = str(guild)
        self.removed_guilds.add(guild)
        if update:
            self._dispatch("GUILD_DELETE", {"id": guild})

    def add_bot(self, guild: str | int) -> None:
        """The bot is invited back to ``guild``: its channels take writes again, and the gateway sends the guild
        (``GUILD_CREATE`` without ``unavailable``, as Discord sends a guild joined: discord.py's ``on_guild_join``;
        with it, the end of an outage: ``on_guild_available``)."""
        guild = str(guild)
        self.removed_guilds.discard(guild)
        joined = self._guild_json(guild)
        del joined["unavailable"]
        self._dispatch("GUILD_CREATE", joined)

    def outage(self, guild: str | int) -> None:
        """``guild`` becomes unavailable (a Discord outage): ``GUILD_DELETE`` with ``unavailable: true``. The bot is
        still in it: nothing is refused (`outage_over` ends it)."""
        self._dispatch("GUILD_DELETE", {"id": str(guild), "unavailable": True})

    def outage_over(self, guild: str | int) -> None:
        """``guild`` is available again: ``GUILD_CREATE`` with ``unavailable: false``."""
        self._dispatch("GUILD_CREATE", self._guild_json(str(guild)))

    def remove_from_thread(self, thread: str | int, *, update: bool = True) -> None:
        """Someone removes the bot from ``thread`` (``THREAD_MEMBERS_UPDATE`` naming it among the removed, unless
        ``update`` is False, as for one missed). From a private thread, every call naming it is refused 403 Missing
        Access (50001) until a mention adds the bot again (`push_guild_message`), unless the bot manages threads in
        its channel (`manage_threads`, `make_admin`), as a moderator reads and writes every private thread; a public
        one it may still post in."""
        thread = str(thread)
        guild = self._channel_guild[thread]
        data = self._guilds[guild]["threads"][thread]
        data.pop("member", None)
        if data["type"] == 12:
            self.left_threads.add(thread)
        if update:
            self._dispatch("THREAD_MEMBERS_UPDATE", {"id": thread, "guild_id": guild, "member_count": 1,
                                                     "removed_member_ids": [self.bot_id]})

    def manage_threads(self, channel: str | int, allow: bool = True) -> None:
        """A server admin gives the bot Manage Threads in ``channel`` (``allow`` False: takes it back), as an
        overwrite for the bot's role, announced with ``CHANNEL_UPDATE``: its private threads the bot was removed
        from take its calls (`remove_from_thread`)."""
        channel = str(channel)
        guild = self._channel_guild[channel]
        data = self._guilds[guild]["channels"][channel]
        role = self.bot_role(guild)
        kept = [o for o in data["permission_overwrites"] if o["id"] != role]
        data["permission_overwrites"] = kept + ([{"id": role, "type": 0, "allow": str(MANAGE_THREADS), "deny": "0"}]
                                                if allow else [])
        self._dispatch("CHANNEL_UPDATE", data)

    def make_admin(self, guild: str | int) -> None:
        """A server admin gives the bot's role Administrator (``GUILD_ROLE_UPDATE``): every permission in every
        channel of ``guild``, Manage Threads among them (`manage_threads`)."""
        guild = str(guild)
        role = next(r for r in self._ensure_guild(guild)["roles"] if r["id"] == self.bot_role(guild))
        role["permissions"] = str(int(role["permissions"]) | ADMINISTRATOR)
        self._dispatch("GUILD_ROLE_UPDATE", {"guild_id": guild, "role": role})

    def _manages_threads(self, thread: str) -> bool:
        """Whether the bot may manage ``thread``'s channel, as Discord works it out: its server-wide permissions
        (the roles ``@everyone`` and its own), then the channel's overwrites for them; Administrator overrides all."""
        g = self._guilds[self._channel_guild[thread]]
        own = self.bot_role(g["id"])
        allowed = 0
        for role in g["roles"]:
            if role["id"] in (g["id"], own):
                allowed |= int(role["permissions"])
        if allowed & ADMINISTRATOR:
            return True
        parent = g["channels"].get(g["threads"][thread]["parent_id"], {})
        overwrites = {o["id"]: o for o in parent.get("permission_overwrites", [])}
        for overwrite in filter(None, map(overwrites.get, (g["id"], own, self.bot_id))):  # in Discord's order
            allowed = (allowed & ~int(overwrite["deny"])) | int(overwrite["allow"])
        return bool(allowed & MANAGE_THREADS)

    def block_dm(self, user: str | int) -> None:
        """``user`` blocks the bot (or closes their DMs): the bot's posts in their DM are refused 403 Cannot send
        messages to this user (50007) until `unblock_dm`. Discord tells the bot nothing of it."""
        self.blocked_dms.add(self.dm_channel(user))

    def unblock_dm(self, user: str | int) -> None:
        self.blocked_dms.discard(self.dm_channel(user))

    def _closed(self, channel: str, *, post: bool = False) -> web.Response | None:
        """Discord's refusal of a call naming ``channel`` that the bot may no longer reach: a channel of a server it
        was removed from, one it may not see (`deny` ``"view_channel"``), a private thread it was removed from
        (`remove_from_thread`) and does not manage (`manage_threads`); ``post``: a post in a blocked DM."""
        if self._channel_guild.get(channel) in self.removed_guilds or "view_channel" in self.denied[channel] \
                or (channel in self.left_threads and not self._manages_threads(channel)):
            return _error(403, MISSING_ACCESS, "Missing Access")
        if post and channel in self.blocked_dms:
            return _error(403, CANNOT_MESSAGE_USER, "Cannot send messages to this user")
        return None

    def _member_guilds(self) -> list[str]:
        """The guilds the bot is in, which a new session is told of."""
        return [g for g in self._guilds if g not in self.removed_guilds]
