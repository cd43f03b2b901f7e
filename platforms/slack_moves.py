"""Slack channels given a new id, for `platforms.base.MovesChats`: a private channel shared with another
organization over Slack Connect.

Slack then sends ``channel_id_changed`` (``old_channel_id``, ``new_channel_id``) to an app subscribed to it, for
the private channels it is in (scope ``groups:read``). The channel's messages and threads are under the new id for
good, the same ``ts`` each, and Slack refuses the old one (``channel_not_found``). The gateway keeps knowing the
channel by the id it had, which keys its sessions, their history and what is under way there; so does the adapter
inside: each event of the channel is read as the old id's on its way in (`ChannelMoves.known_as`), each Web API
call for it is made with the new id on its way out (`ChannelMoves.now`). The move is stored by the gateway before it
is used, and handed back at each start; an event whose move the store refuses is left unacknowledged, and Slack sends
it again.

What this cannot mend: Slack does not order its events, so a message of the channel that comes before the
``channel_id_changed`` event is taken under the new id, into a conversation of its own; and a move Slack gave up
telling while the gateway was down is not known at all: the first write to the old id, refused, tells the gateway
the channel is lost (`platforms.slack_membership`). Logged under ``platforms.slack``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from platforms.base import ChatMoved
from platforms.slack_catchup import Where, ts_key

log = logging.getLogger("platforms.slack")


class ChannelMoves:
    """The moves this process knows: the gateway's channel id -> the channel's id on Slack now, and back."""

    def __init__(self) -> None:
        self._now: dict[str, str] = {}
        self._known_as: dict[str, str] = {}
        """Every id a moved channel had or has on Slack (but the gateway's own) -> the gateway's id."""
        self._store: ChatMoved | None = None
        self._storing = asyncio.Lock()
        """Held while a move is stored: a later move of the channel, come meanwhile, goes on from the gateway's id
        once the store has it (read before, the channel's latest id was taken for the gateway's)."""

    def bind(self, moves: Mapping[str, str], moved: ChatMoved) -> None:
        """The moves stored so far, and where to store the next ones (`MovesChats.bind_chat_moves`)."""
        self._now = dict(moves)
        self._known_as = {new: old for old, new in moves.items()}
        self._store = moved

    def now(self, chat_id: str) -> str:
        """The id Slack knows the gateway's channel ``chat_id`` by now."""
        return self._now.get(chat_id, chat_id)

    def known_as(self, channel: str) -> str:
        """The id the gateway knows Slack's channel ``channel`` by."""
        return self._known_as.get(channel, channel)

    def conversations(self, last_seen: Mapping[Where, str]) -> dict[Where, str]:
        """``last_seen`` (conversation -> the newest ts taken in there), for a catch-up: a conversation a message of a
        moved channel started under its new id, before the move was known, read as the gateway's id's, from the
        newest ts taken in under either. Read under each, the channel's history is the same, and each hands on again
        as its own what the other took in."""
        folded: dict[Where, str] = {}
        for (channel, thread), ts in last_seen.items():
            where = (self.known_as(channel), thread)
            if where not in folded or ts_key(ts) > ts_key(folded[where]):
                folded[where] = ts
        return folded

    def inbound(self, payload: dict[str, Any], key: str = "channel") -> dict[str, Any]:
        """``payload`` (an event, a slash command's body) with its channel (``key``) named as the gateway names it."""
        channel = payload.get(key)
        if not isinstance(channel, str) or channel not in self._known_as:
            return payload
        return {**payload, key: self._known_as[channel]}

    async def changed(self, event: dict[str, Any]) -> None:
        """A ``channel_id_changed`` event came: stored, then used, one at a time. One Slack sends again changes
        nothing, after a later move of the channel too (its new id is one the channel had: Slack refuses it); a move
        of a channel moved before goes on from the gateway's id (``G1`` -> ``C1`` -> ``C2``: ``G1`` is ``C2``)."""
        old, new = event.get("old_channel_id"), event.get("new_channel_id")
        if not isinstance(old, str) or not isinstance(new, str) or not old or not new or old == new:
            return
        async with self._storing:
            chat = self.known_as(old)
            if self.now(chat) == new or self._known_as.get(new) == chat:
                return
            if self._store is not None:
                await self._store(chat, new)
            self._now[chat] = new
            self._known_as[new] = chat
        log.info("slack: channel %s is %s on Slack now; the conversation goes on there", chat, new)
