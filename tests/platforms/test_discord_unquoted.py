"""`platforms.discord_unquoted`: the channels remembered as refusing the bot's replies, for a while and
a bounded number of them, and the warning said once a channel."""

from __future__ import annotations

import logging

from platforms.discord_unquoted import RefusedReplies

UNQUOTED = "lacks Read Message History"


def test_a_refusal_is_trusted_for_a_while_then_tried_again():
    now = [1000.0]
    replies = RefusedReplies(lambda: now[0], refused_for=600.0)
    replies.learnt("600")
    now[0] += 599.0
    assert replies.refused("600") and not replies.refused("601")
    now[0] += 1.0
    assert not replies.refused("600")


def test_a_clock_set_back_does_not_make_a_refusal_last():
    now = [1000.0]
    replies = RefusedReplies(lambda: now[0], refused_for=600.0)
    replies.learnt("600")
    now[0] = 0.0
    assert not replies.refused("600")


def test_only_the_most_recently_refused_channels_are_kept():
    replies = RefusedReplies(lambda: 0.0, remembered=3)
    for channel in ("1", "2", "3", "4", "1"):
        replies.learnt(channel)
    assert [c for c in ("1", "2", "3", "4") if replies.refused(c)] == ["1", "3", "4"]


def test_said_once_a_channel_though_learnt_again_after_each_while(caplog):
    now = [0.0]
    replies = RefusedReplies(lambda: now[0], refused_for=600.0)
    with caplog.at_level(logging.WARNING, logger="platforms.discord"):
        for _ in range(3):
            replies.learnt("600")
            now[0] += 600.0
        replies.learnt("601")
    assert [r.getMessage().split()[2] for r in caplog.records if UNQUOTED in r.getMessage()] == ["600", "601"]
