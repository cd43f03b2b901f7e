"""A deletion a Discord stop leaves queued (`platforms.discord_unrecorded.Unrecorded.left`) is dropped, as an edit
is: its message, recorded, is answered after the restart; nor does it move its channel's last message seen, which
would make the next start's catch-up pass over a message left with it. ``MESSAGE_DELETE_BULK`` is read as one
deletion per message, in the order they were sent (`platforms.discord_deletions.deletions`)."""

from __future__ import annotations

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.discord_deletions import Deletion, deletions
from platforms.discord_seen import LastSeen
from platforms.discord_unrecorded import Unrecorded
from platforms.discord_urls import discord


def test_a_deletion_left_by_a_stop_is_dropped_and_moves_no_channel():
    unrecorded, last_seen = Unrecorded(), LastSeen()
    unrecorded.left(Deletion(600, 1_000), last_seen)
    assert not last_seen.last_seen and not unrecorded.not_taken and not unrecorded.cut_off


def test_a_purge_is_one_deletion_per_message_in_the_order_sent():
    purge = discord.RawBulkMessageDeleteEvent({"ids": ["30", "10", "20"], "channel_id": "600", "guild_id": "500"})
    assert deletions(purge) == [Deletion(600, 10), Deletion(600, 20), Deletion(600, 30)]
    one = discord.RawMessageDeleteEvent({"id": "10", "channel_id": "77"})  # a DM's: no guild
    assert deletions(one) == [Deletion(77, 10)]
