"""The channels the Slack bot can no longer write to, for `platforms.base.LosesChats`.

Slack says so in an event, to an app subscribed to it: the bot removed from a channel (``channel_left`` or
``group_left`` to the bot itself, ``member_left_channel`` naming its user; Slack sends either, or both, and now and
then withholds ``channel_left``), the channel archived (``channel_archive``, ``group_archive``) or deleted
(``channel_deleted``, ``group_deleted``). They need the ``channels:read`` scope (public channels) or
``groups:read`` (private ones). A write Slack refuses so (``not_in_channel``, ``is_archived``,
``channel_not_found``) says the same when no such event came: not subscribed to, or sent while the gateway was
down. A direct message is left alone: its user cannot remove the app, and no event says they did.

The gateway is told once per channel, until the bot may write there again: added back (``member_joined_channel``
naming its user), the channel unarchived (``channel_unarchive``, ``group_unarchive``), or a message of the
channel handed over (`platforms.chat_losses`). Slack is acknowledged for the event at once: the telling is the
adapter's to finish, a store that refuses it asked again until it takes it, the bot is back there or the adapter
closes. Logged under ``platforms.slack``.
"""

from __future__ import annotations

import logging
from typing import Any

from platforms import slack_uploads
from platforms.chat_losses import LostChats

log = logging.getLogger("platforms.slack")

REMOVED = "the bot was removed from the channel"
GONE = {"channel_left": REMOVED, "group_left": REMOVED, "member_left_channel": REMOVED,
        "channel_archive": "the channel was archived", "group_archive": "the channel was archived",
        "channel_deleted": "the channel was deleted", "group_deleted": "the channel was deleted"}
"""The events that say the bot can no longer write to their channel, and why, in words that name no one."""
BACK = frozenset({"member_joined_channel", "channel_unarchive", "group_unarchive"})
OF_A_MEMBER = frozenset({"member_left_channel", "member_joined_channel"})
"""Events about any member, sent for every channel the bot is in: only those naming the bot count."""
EVENTS = (*GONE, *BACK)
REFUSED = {"not_in_channel": "the bot is not in the channel", "is_archived": "the channel is archived",
           "channel_not_found": "the channel was not found"}
"""Slack's errors for a channel the bot cannot write to at all, not for a right it lacks there."""
WRITES = frozenset({"chat.postMessage", "chat.update", "chat.delete", "chat.postEphemeral", slack_uploads.METHOD})


def change(event: dict[str, Any], bot_user_id: str | None) -> tuple[str, str | None] | None:
    """What ``event`` (one of `EVENTS`) says of the bot's place in its channel: (channel, why it can no longer
    write there), or (channel, None) when it may again; None when it says nothing of the bot."""
    kind, channel = event.get("type"), event.get("channel")
    if not isinstance(channel, str) or not channel or (kind in OF_A_MEMBER and event.get("user") != bot_user_id):
        return None
    return channel, GONE.get(str(kind))


def _direct(channel: str) -> bool:
    return channel.startswith("D")


class Membership(LostChats):
    """The channels the gateway was told the bot can no longer write to (`LosesChats`), by Slack's events and
    refusals."""

    def __init__(self) -> None:
        super().__init__("slack", "channel")

    def heard(self, event: dict[str, Any], bot_user_id: str | None) -> None:
        """One of `EVENTS` came: the gateway is told of a channel lost (`lost`); one the bot may write to again
        is forgotten (`back`)."""
        said = change(event, bot_user_id)
        if said is None:
            return
        channel, why = said
        if why is None:
            if self.back(channel):
                log.info("slack: the bot may write to channel %s again (%s)", channel, event.get("type"))
            return
        log.debug("slack: %s in channel %s", event.get("type"), channel)
        self.lost(channel, why)

    def refused(self, method: str, channel: str | None, error: str | None) -> None:
        """A call failed with Slack's ``error`` code: a write to a channel refused as one the bot cannot write to
        tells the gateway, once."""
        if method in WRITES and channel and not _direct(channel) and error in REFUSED:
            self.lost(channel, REFUSED[error])
