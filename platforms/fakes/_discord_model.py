"""The fake Discord's recorded state and data shapes: the calls and messages tests read, and
the JSON of messages, guilds, channels and threads it serves on the gateway and REST alike."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from platforms.fakes._discord_files import FLAG_VOICE_MESSAGE, Upload
from platforms.fakes._discord_mentions import Pings, pings

FLAG_LOADING = 128
FLAG_COMPONENTS_V2 = 1 << 15
ACTION_ROW = 1
"""The one component type of the old kind at a message's top level (buttons, menus); any other is a display one."""
ISO = "2026-01-01T00:00:00.000000+00:00"
TEXT, VOICE, ANNOUNCEMENT, STAGE, FORUM, MEDIA = 0, 2, 5, 13, 15, 16
"""The guild channel kinds (Discord's channel types) a server admin may add the bot to (`add_channel`)."""
_MENTIONED_USER = re.compile(r"<@!?(\d+)>")
_MENTIONED_ROLE = re.compile(r"<@&(\d+)>")
_MENTIONED_CHANNEL = re.compile(r"<#(\d+)>")
THREAD_ONLY = (FORUM, MEDIA)
"""Channels that hold posts only (threads, each opened by a message of the thread's own id): a message
posted in one itself is refused (400, 50008)."""
_KIND_FIELDS: dict[int, dict[str, Any]] = {
    VOICE: {"bitrate": 64000, "user_limit": 0, "rtc_region": None},
    STAGE: {"bitrate": 64000, "user_limit": 0, "rtc_region": None},
    FORUM: {"available_tags": [], "default_reaction_emoji": None, "default_sort_order": None,
            "default_forum_layout": 0, "default_thread_rate_limit_per_user": 0, "flags": 0},
    MEDIA: {"available_tags": [], "default_reaction_emoji": None, "default_sort_order": None,
            "default_thread_rate_limit_per_user": 0, "flags": 0},
}


@dataclass
class Call:
    """One REST request the bot made."""

    method: str
    route: str
    """The route template, e.g. ``POST /channels/{channel_id}/messages``."""
    path: str
    body: Any
    query: dict[str, str]
    headers: dict[str, str]
    status: int = 0
    at: float = field(default_factory=time.monotonic)


@dataclass
class FakeMessage:
    id: str
    channel_id: str
    author_id: str
    content: str
    from_bot: bool
    flags: int = 0
    nonce: str | None = None
    edits: list[str] = field(default_factory=list)
    """Earlier contents, oldest first; `content` is the current one."""
    deleted: bool = False
    interaction_id: str | None = None
    attachments: list[dict[str, Any]] = field(default_factory=list)
    """The attachment objects of a user's message (see `platforms.fakes._discord_files`)."""
    pings: Pings = field(default_factory=Pings)
    """Whom the bot's message notifies, as its content and ``allowed_mentions`` say
    (`platforms.fakes._discord_mentions`); worked out afresh by each edit of the content."""
    reply_to: str | None = None
    """The id of the message the bot's message replies to (its ``message_reference``), if any."""
    at: float = 0.0
    """When it was posted, on the fake's ``clock``."""


def _user(user_id: str, name: str | None = None, *, bot: bool = False) -> dict[str, Any]:
    """A user object: ``username`` is the unique handle, ``global_name`` the display name (anyone's choice)."""
    name = name or f"user{user_id}"
    return {"id": user_id, "username": name, "global_name": name, "discriminator": "0", "avatar": None, "bot": bot}


class DiscordModel:
    """Messages, guilds, channels and threads of `FakeDiscord` (which holds the state and mixes
    this in), and their JSON; new guilds, channels and threads are announced on the gateway."""

    def _store(self, channel: str, author: str, content: str, *, from_bot: bool, message_id: str | None = None,
               **kw: Any) -> FakeMessage:
        message = FakeMessage(message_id or self.new_id(), channel, author, content, from_bot, at=self.clock(), **kw)
        self.messages[channel].append(message)
        if (known := self._channel_json(channel)) is not None:
            known["last_message_id"] = message.id  # as Discord sends it with the channel
        self._touch()
        return message

    def _channel_json(self, channel: str) -> dict[str, Any] | None:
        """A guild channel's or thread's object (kept, so it changes as the channel does), or a DM's."""
        if (guild := self._channel_guild.get(channel)) is not None:
            g = self._guilds[guild]
            return g["channels"].get(channel) or g["threads"].get(channel)
        user = next((u for u, dm in self._dm_channels.items() if dm == channel), None)
        if user is None:
            return None
        last = self.messages[channel][-1].id if self.messages.get(channel) else None
        return {"id": channel, "type": 1, "last_message_id": last, "flags": 0, "recipients": [_user(user)]}

    def _history_json(self, m: FakeMessage) -> dict[str, Any]:
        """A message as ``GET /channels/{id}/messages`` serves it: as it was dispatched (mentions, the
        message replied to, a forward's snapshot) with its current content, without the gateway-only
        ``guild_id`` and ``member``, and without a nonce: Discord keeps none with a message (only the
        post's answer and its MESSAGE_CREATE carry it)."""
        data = dict(self._dispatched.get(m.id) or self._message_json(m))
        if m.from_bot:
            data |= self._message_json(m)
        for key in ("guild_id", "member", "nonce"):
            data.pop(key, None)
        return data

    def _echo(self, message: FakeMessage) -> dict[str, Any]:
        """Discord sends the bot its own messages over the gateway too; bots must ignore them."""
        data = self._message_json(message, guild=self._channel_guild.get(message.channel_id))
        self._dispatch("MESSAGE_CREATE", data)
        return data

    def _find(self, channel: str, message_id: str) -> FakeMessage | None:
        return next((m for m in self.messages.get(channel, []) if m.id == message_id and not m.deleted), None)

    def _message_payload(
        self, channel: str, user: str, name: str | None, text: str, *, guild: str | None = None,
        uploads: Sequence[Upload] = (), global_name: str | None = None, nick: str | None = None,
        forwarded: bool = False, stickers: Sequence[str] = (), message_id: str | None = None,
        poll: tuple[str, Sequence[str]] | None = None, embeds: Sequence[dict[str, Any]] = (),
        components: Sequence[dict[str, Any]] = (),
    ) -> dict[str, Any]:
        voice = any(u.voice for u in uploads)
        attachments = self._attachments(channel, uploads)
        flags = FLAG_VOICE_MESSAGE if voice else 0
        if forwarded:  # the forward itself holds nothing: its snapshot holds the message forwarded
            stored = self._store(channel, user, "", from_bot=False, message_id=message_id)
        else:
            stored = self._store(channel, user, text, from_bot=False, attachments=attachments, flags=flags,
                                 message_id=message_id)
        data = self._message_json(stored, guild=guild, name=name)
        held = data
        if forwarded:
            data["message_reference"] = {"type": 1, "message_id": self.new_id(), "channel_id": self.new_id()}
            held = {
                "type": 0, "content": text, "embeds": [], "attachments": attachments, "timestamp": ISO,
                "edited_timestamp": None, "flags": flags, "mentions": [], "mention_roles": [], "components": [],
            }
            data["message_snapshots"] = [{"message": held}]
        held["embeds"] = [dict(embed) for embed in embeds]
        held["components"] = [dict(component) for component in components]
        if any(component.get("type") != ACTION_ROW for component in components):
            held["flags"] |= FLAG_COMPONENTS_V2  # a display component's message holds no content or embeds of its own
        if stickers:  # Discord sends them whatever the Message Content intent (`strip_message_content`)
            held["sticker_items"] = [{"id": self.new_id(), "name": n, "format_type": 1} for n in stickers]
        if poll is not None:  # a poll is its own message: it cannot be forwarded
            question, answers = poll
            data["poll"] = {"question": {"text": question}, "expiry": ISO, "allow_multiselect": False,
                            "layout_type": 1, "answers": [{"answer_id": n, "poll_media": {"text": answer}}
                                                          for n, answer in enumerate(answers, 1)]}
        if global_name is not None:
            data["author"]["global_name"] = global_name
        if name is not None or global_name is not None:
            self._users[user] = dict(data["author"])
        if guild is not None:
            data["member"] = {"roles": [], "joined_at": ISO, "deaf": False, "mute": False, "flags": 0, "nick": nick}
        held["mentions"], held["mention_roles"] = self._mentioned(text), list(pings(text, None).roles)
        return data

    def _mentioned(self, content: str) -> list[dict[str, Any]]:
        """The users ``content`` names (``<@id>``), as a user's message lists them (``mentions``): each as the
        fake last saw them post (their ``name`` and ``global_name``; ``user<id>`` for one never seen), without
        the partial ``member`` Discord adds to each on the gateway in a guild (discord.py holds a user then)."""
        return [_user(u, self.bot_name, bot=True) if u == self.bot_id else dict(self._users.get(u) or _user(u))
                for u in pings(content, None).users]

    def _resolved(self, content: str, guild: str | None) -> dict[str, Any]:
        """What Discord sends with a slash command whose string option mentions users, roles or channels (the
        interaction data's ``resolved``): each user the fake knows (who posted, and the bot), with a partial
        ``member`` in a guild; each role, channel and thread of ``guild``. What it does not know (an id never
        seen, another guild's) is left out, as Discord leaves out what does not exist."""
        users = {u: self._users.get(u) or (_user(u, self.bot_name, bot=True) if u == self.bot_id else None)
                 for u in dict.fromkeys(_MENTIONED_USER.findall(content))}
        resolved: dict[str, Any] = {"users": {u: dict(user) for u, user in users.items() if user is not None}}
        g = self._guilds.get(guild) if guild is not None else None
        if g is not None:
            resolved["members"] = {u: {"roles": [], "joined_at": ISO, "flags": 0, "permissions": "0", "nick": None}
                                   for u in resolved["users"]}
            roles = {r["id"]: r for r in g["roles"]}
            resolved["roles"] = {r: roles[r] for r in _MENTIONED_ROLE.findall(content) if r in roles}
            known = g["channels"] | g["threads"]
            resolved["channels"] = {c: known[c] | {"permissions": "2248473465835073"}
                                    for c in _MENTIONED_CHANNEL.findall(content) if c in known}
        return {kind: found for kind, found in resolved.items() if found}

    def _message_json(self, m: FakeMessage, *, guild: str | None = None, name: str | None = None) -> dict[str, Any]:
        author = _user(self.bot_id, self.bot_name, bot=True) if m.from_bot else _user(m.author_id, name)
        data: dict[str, Any] = {
            "id": m.id, "channel_id": m.channel_id, "author": author, "content": m.content,
            "timestamp": ISO, "edited_timestamp": ISO if m.edits else None, "tts": False,
            "mention_everyone": m.pings.everyone, "mentions": [_user(u) for u in m.pings.users],
            "mention_roles": list(m.pings.roles), "attachments": m.attachments, "embeds": [],
            "components": [], "pinned": False, "type": 0, "flags": m.flags,
        }
        if m.nonce is not None:
            data["nonce"] = m.nonce
        if m.reply_to is not None:  # a reply: type 19, with the message replied to while it exists
            replied = self._find(m.channel_id, m.reply_to)
            data["type"] = 19
            data["message_reference"] = {"type": 0, "message_id": m.reply_to, "channel_id": m.channel_id,
                                         **({"guild_id": guild} if guild is not None else {})}
            data["referenced_message"] = None if replied is None else \
                {k: v for k, v in self._history_json(replied).items() if k != "referenced_message"}
        if guild is not None:
            data["guild_id"] = guild
        if m.interaction_id is not None:
            data["webhook_id"] = self.application_id
            data["application_id"] = self.application_id
            data["interaction_metadata"] = self._interaction_metadata(m)
        return data

    def _interaction_metadata(self, m: FakeMessage) -> dict[str, Any]:
        """What Discord says of the interaction an answer belongs to; a follow-up also names the
        interaction's first answer (``original_response_message_id``), the first answer does not."""
        assert m.interaction_id is not None
        record = self.interactions[m.interaction_id]
        data = {"id": m.interaction_id, "type": 2, "user": record["user"],
                "authorizing_integration_owners": record["owners"]}
        if record["original"] not in (None, m.id):
            data["original_response_message_id"] = record["original"]
        return data

    def _ensure_guild(self, guild: str) -> dict[str, Any]:
        if guild not in self._guilds:
            # Discord gives a bot a role of its own name in each server it joins (tags.bot_id names the bot).
            own_role = self.new_id()
            self._guilds[guild] = {
                "id": guild, "name": f"guild {guild}", "icon": None, "owner_id": self.new_id(),
                "features": [], "emojis": [], "stickers": [], "member_count": 2, "large": False,
                "unavailable": False, "joined_at": ISO, "verification_level": 0, "premium_tier": 0,
                "default_message_notifications": 0, "explicit_content_filter": 0, "mfa_level": 0,
                "nsfw_level": 0, "preferred_locale": "en-US", "system_channel_flags": 0, "afk_timeout": 300,
                "roles": [{"id": guild, "name": "@everyone", "permissions": "2248473465835073", "position": 0,
                           "color": 0, "hoist": False, "managed": False, "mentionable": False, "flags": 0},
                          {"id": own_role, "name": self.bot_name, "permissions": "274878008320", "position": 1,
                           "color": 0, "hoist": False, "managed": True, "mentionable": False, "flags": 0,
                           "tags": {"bot_id": self.bot_id}}],
                "members": [{"user": _user(self.bot_id, self.bot_name, bot=True), "roles": [own_role],
                             "joined_at": ISO, "deaf": False, "mute": False, "flags": 0}],
                "channels": {}, "threads": {}, "voice_states": [], "presences": [], "stage_instances": [],
                "guild_scheduled_events": [], "soundboard_sounds": [],
            }
            if self._session is not None:
                self._dispatch("GUILD_CREATE", self._guild_json(guild))
        return self._guilds[guild]

    def bot_role(self, guild: str | int) -> str:
        """The id of the role Discord made for the bot in ``guild`` (created with the guild)."""
        roles = self._ensure_guild(str(guild))["roles"]
        return next(r["id"] for r in roles if (r.get("tags") or {}).get("bot_id") == self.bot_id)

    def add_role(self, guild: str | int, name: str) -> str:
        """An ordinary role in ``guild`` (announced with GUILD_ROLE_CREATE); returns its id."""
        guild = str(guild)
        role = {"id": self.new_id(), "name": name, "permissions": "0", "position": 1, "color": 0, "hoist": False,
                "managed": False, "mentionable": True, "flags": 0}
        self._ensure_guild(guild)["roles"].append(role)
        if self._session is not None:
            self._dispatch("GUILD_ROLE_CREATE", {"guild_id": guild, "role": role})
        return str(role["id"])

    def deny(self, channel: str | int, *permissions: str) -> None:
        """The bot lacks ``permissions`` in ``channel`` (a thread's own id for a thread), refused as Discord
        refuses them (403, 50013 Missing Permissions): ``"send_messages"`` (in a thread, Discord's Send Messages
        in Threads) any post or typing, ``"attach_files"`` a post with a file; ``"read_message_history"`` a post
        that replies to a message, with Discord's own code for that (403, 160002 Cannot reply without permission
        to read message history); ``"view_channel"``, the channel hidden from the bot, every call naming it (403,
        50001 Missing Access: `platforms.fakes._discord_membership`)."""
        self.denied[str(channel)].update(permissions)

    def allow(self, channel: str | int, *permissions: str) -> None:
        """The bot is granted ``permissions`` in ``channel`` again (`deny`)."""
        self.denied[str(channel)].difference_update(permissions)

    def _guild_json(self, guild: str) -> dict[str, Any]:
        """As Discord sends a guild: with its active threads the bot can see (not the archived ones, nor the
        private ones it was not added to), which Discord syncs up front; an archived one only on a request."""
        g = self._guilds[guild]
        threads = [t for t in g["threads"].values() if self._sees(t) and not t["thread_metadata"]["archived"]]
        return g | {"channels": list(g["channels"].values()), "threads": threads}

    def _thread_only(self, channel: str) -> bool:
        """A forum or media channel, which takes no message but in its posts."""
        known = self._channel_json(channel)
        return known is not None and known.get("type") in THREAD_ONLY

    @staticmethod
    def _sees(thread: dict[str, Any]) -> bool:
        """Whether the bot sees the thread: a public one, or a private one it was added to (its ``member``)."""
        return thread["type"] != 12 or "member" in thread

    def add_channel(self, guild: str | int, channel: str | int, kind: int = TEXT) -> None:
        """A guild channel of Discord's type ``kind`` (`TEXT`, `VOICE` or `STAGE` with their text chat,
        `ANNOUNCEMENT`, `FORUM`, `MEDIA`), announced with CHANNEL_CREATE; `push_guild_message` makes a text
        channel of one it does not know. In a forum or media channel each message without a ``thread_id`` opens a
        post; an announcement channel's threads are type 10."""
        self._ensure_channel(str(guild), str(channel), kind)

    def _ensure_channel(self, guild: str, channel: str, kind: int = TEXT) -> None:
        g = self._ensure_guild(guild)
        if channel not in g["channels"]:
            g["channels"][channel] = {
                "id": channel, "type": kind, "guild_id": guild, "name": f"channel-{channel}", "position": 0,
                "permission_overwrites": [], "parent_id": None, "nsfw": False, "topic": None,
                "last_message_id": None, "rate_limit_per_user": 0, **_KIND_FIELDS.get(kind, {}),
            }
            self._channels.add(channel)
            self._channel_guild[channel] = guild
            if self._session is not None:
                self._dispatch("CHANNEL_CREATE", g["channels"][channel])

    def _ensure_thread(self, guild: str, parent: str, thread: str, owner: str, *, private: bool = False) -> None:
        g = self._guilds[guild]
        if thread not in g["threads"]:
            kind = 12 if private else 10 if g["channels"][parent]["type"] == ANNOUNCEMENT else 11
            g["threads"][thread] = {
                "id": thread, "type": kind, "guild_id": guild, "parent_id": parent, "owner_id": owner,
                "name": f"thread-{thread}", "last_message_id": None, "rate_limit_per_user": 0,
                "message_count": 0, "member_count": 1, "flags": 0,
                "thread_metadata": {"archived": False, "auto_archive_duration": 1440,
                                    "archive_timestamp": ISO, "locked": False},
            }
            self._channels.add(thread)
            self._channel_guild[thread] = guild
            if self._session is not None and self._sees(g["threads"][thread]):
                self._dispatch("THREAD_CREATE", g["threads"][thread] | {"newly_created": True})

    def _join_thread(self, guild: str, thread: str) -> None:
        """The bot added to a private thread (a mention adds it): Discord sends THREAD_CREATE, with the
        bot's thread member, before anything said there, so that the client knows the thread."""
        data = self._guilds[guild]["threads"][thread]
        data["member"] = {"id": thread, "user_id": self.bot_id, "join_timestamp": ISO, "flags": 0}
        self.left_threads.discard(thread)
        self._dispatch("THREAD_CREATE", data)

    def archive_thread(self, thread: str | int) -> None:
        """The thread archives (inactive for its ``auto_archive_duration``, or a moderator's doing), announced
        with THREAD_UPDATE; Discord's guilds no longer list it. A message posted in it unarchives it (THREAD_UPDATE
        first, as Discord sends it: the client may not know the thread any more)."""
        self._set_archived(str(thread), True)

    def lock_thread(self, thread: str | int, locked: bool = True) -> None:
        """A moderator locks the thread (``locked`` False: unlocks it), announced with THREAD_UPDATE. A bot that does
        not manage threads in its channel (`manage_threads`, `make_admin`) may no longer post, edit or show
        "typing" there, refused as Discord refuses a locked thread's (403, 50083 ``Thread is archived``, archived or
        not), and its post no longer unarchives an archived one; one that does may, and its post unarchives it."""
        thread = str(thread)
        data = self._guilds[self._channel_guild[thread]]["threads"][thread]
        data["thread_metadata"]["locked"] = locked
        if self._sees(data):
            self._dispatch("THREAD_UPDATE", data)

    def _locked_out(self, channel: str) -> bool:
        """Whether ``channel`` is a locked thread (`lock_thread`) the bot may not write to: it manages no threads
        there."""
        known = self._channel_json(channel)
        return known is not None and bool(known.get("thread_metadata", {}).get("locked")) \
            and not self._manages_threads(channel)

    def _archived(self, channel: str) -> bool:
        """Whether ``channel`` is an archived thread (`archive_thread`)."""
        known = self._channel_json(channel)
        return known is not None and bool(known.get("thread_metadata", {}).get("archived"))

    def _set_archived(self, thread: str, archived: bool) -> None:
        data = self._guilds[self._channel_guild[thread]]["threads"][thread]
        data["thread_metadata"]["archived"] = archived
        if self._sees(data):
            self._dispatch("THREAD_UPDATE", data)
