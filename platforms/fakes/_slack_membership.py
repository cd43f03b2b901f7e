"""The fake Slack's channels the bot cannot write to: removed from them, archived or deleted, or given a new id,
with the events Slack sends about each (over Socket Mode, or HTTP, as messages go) and the errors it answers the bot's
writes there."""

from __future__ import annotations

from typing import Any

WRITES = frozenset({"chat.postMessage", "chat.update", "chat.delete", "chat.postEphemeral",
                    "files.completeUploadExternal"})
READS = frozenset({"conversations.history", "conversations.replies"})


class SlackMembership:
    """For `FakeSlack`, which holds `refusals` and mixes this in."""

    async def remove_bot(self, channel: str, *, by: str = "U0ADMIN", private: bool = False,
                         events: tuple[str, ...] = ("member_left_channel", "channel_left")) -> None:
        """Someone (``by``) removes the bot from ``channel``: writes and reads there are refused, as Slack refuses
        them (``not_in_channel``; ``channel_not_found`` for a ``private`` channel, which the bot no longer sees),
        until `add_bot`. ``events`` are sent, in order: ``member_left_channel`` naming the bot, ``channel_left``
        to the bot (``group_left`` for a private channel); ``()`` sends none, as when the app subscribes to none
        or they were lost while the gateway was down."""
        self.refusals[channel] = "channel_not_found" if private else "not_in_channel"
        for kind in events:
            if kind == "member_left_channel":
                await self.push_event({"type": kind, "user": self.bot_user_id, "channel": channel,
                                       "channel_type": "G" if private else "C", "team": self.team_id,
                                       "event_ts": self._next_ts()})
            else:
                left = "group_left" if private and kind == "channel_left" else kind
                await self.push_event({"type": left, "channel": channel, "actor_id": by, "event_ts": self._next_ts()})

    async def add_bot(self, channel: str, *, by: str = "U0ADMIN", private: bool = False, event: bool = True) -> None:
        """Someone (``by``) adds the bot to ``channel`` again: its writes there work; with ``event``, Slack's
        ``member_joined_channel`` naming the bot is sent."""
        self.refusals.pop(channel, None)
        if event:
            await self.push_event({"type": "member_joined_channel", "user": self.bot_user_id, "channel": channel,
                                   "channel_type": "G" if private else "C", "team": self.team_id, "inviter": by,
                                   "event_ts": self._next_ts()})

    async def archive(self, channel: str, *, by: str = "U0ADMIN", private: bool = False, event: bool = True) -> None:
        """Someone (``by``) archives ``channel``: the bot's writes there are refused ``is_archived`` (it still reads
        it) until `unarchive`. With ``event``, Slack's ``channel_archive`` (``group_archive``) is sent, then the
        ``channel_archive`` message Slack posts in the channel, which the bot is sent as a member."""
        self.refusals[channel] = "is_archived"
        if not event:
            return
        kind = "group_archive" if private else "channel_archive"
        await self.push_event({"type": kind, "channel": channel, "user": by, "event_ts": self._next_ts()})
        message = self._store(channel, None, {"subtype": kind, "user": by, "text": f"<@{by}> archived the channel"})
        await self.push_event({**message, "channel_type": "group" if private else "channel", "event_ts": message["ts"]})

    async def unarchive(self, channel: str, *, by: str = "U0ADMIN", private: bool = False) -> None:
        """Someone (``by``) unarchives ``channel``: the bot's writes there work again, and Slack's
        ``channel_unarchive`` (``group_unarchive``) is sent."""
        self.refusals.pop(channel, None)
        await self.push_event({"type": "group_unarchive" if private else "channel_unarchive", "channel": channel,
                               "user": by, "event_ts": self._next_ts()})

    async def delete_channel(self, channel: str, *, private: bool = False, event: bool = True) -> None:
        """An admin deletes ``channel``: everything there is refused ``channel_not_found``; with ``event``, Slack's
        ``channel_deleted`` (``group_deleted``) is sent."""
        self.refusals[channel] = "channel_not_found"
        if event:
            await self.push_event({"type": "group_deleted" if private else "channel_deleted", "channel": channel,
                                   "event_ts": self._next_ts()})

    async def change_channel_id(self, old: str, new: str, *, event: bool = True) -> None:
        """The channel ``old`` is ``new`` from now on, as when a private channel is shared with another organization
        (Slack Connect): its messages, threads and all, are under ``new``, and everything addressed to ``old`` is
        refused ``channel_not_found``. With ``event``, Slack's ``channel_id_changed`` is sent."""
        for (channel, thread_ts) in [key for key in self.messages if key[0] == old]:
            moved = self.messages.pop((channel, thread_ts))
            for message in moved:
                message["channel"] = new
            self.messages[(new, thread_ts)].extend(moved)
        self.refusals[old] = "channel_not_found"
        if event:
            await self.push_event({"type": "channel_id_changed", "old_channel_id": old, "new_channel_id": new,
                                   "event_ts": self._next_ts()})

    def _refusal(self, method: str, params: dict[str, Any]) -> str | None:
        """Slack's error for a bot's call to a channel it cannot write to (an archived one it may still read)."""
        channel = str(params.get("channel_id" if method == "files.completeUploadExternal" else "channel") or "")
        refusal = self.refusals.get(channel)
        if refusal is None or method not in WRITES | READS or (method in READS and refusal == "is_archived"):
            return None
        return refusal
