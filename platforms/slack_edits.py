"""A user's edit of their Slack message (``message_changed``), as the message now reads.

Apart from the adapter (`platforms.slack`) because it is pure translation: the event carries the whole
message as edited, which the adapter then reads as it reads a message (`platforms.slack_addressed`,
`platforms.slack_inbound.text_of`), so its chat, thread, ``ts`` and text are those the message was handed over
with. Slack also says ``message_changed`` of changes no one typed: a link's preview added (an unfurl), a thread's
reply counted, a pin; those leave the text as it was, and are no edit. Slack sends an event again when it heard no
answer in time (a slow answer, a full disk's refusal) and promises no order: `LatestEdits` passes over an edit
older than one already heard, which would have the turn answer the text as it read before. It remembers each edit
for as long as Slack may still send an older one again (`KEPT_FOR`), not for a number of edits: a busy workspace's
thousand other edits in those minutes pushed the message out, and its older edit, sent again, undid the later one.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from platforms.recent import remember
from platforms.slack_catchup import ts_key

KEPT_FOR = 15 * 60.0
"""Seconds `LatestEdits` keeps a message's latest edit after hearing it: Slack sends an event it heard no answer to
again over about five minutes (at once, after a minute, after five), so an older edit may come that long after."""
MOST_KEPT = 10_000
"""Messages' latest edits `LatestEdits` keeps at most, however recent: more than Slack hands an app from one
workspace in `KEPT_FOR` (30,000 events an hour, past which it holds them back), so only memory is bounded by it."""


def edited_message(event: dict[str, Any]) -> dict[str, Any] | None:
    """The message a ``message_changed`` event carries, shaped as its own ``message`` event came (its channel
    and channel type; no ``thread_ts`` of a parent's own: the count of its replies came later), or None when
    its text is as it was."""
    message, previous = event.get("message"), event.get("previous_message")
    if not isinstance(message, dict) or "ts" not in message:
        return None
    if isinstance(previous, dict) and previous.get("text") == message.get("text"):
        return None
    shaped = {**message, "channel": event["channel"], "channel_type": event.get("channel_type")}
    if shaped.get("thread_ts") == shaped["ts"]:
        del shaped["thread_ts"]
    return shaped


class LatestEdits:
    """The time of the latest edit heard of each message edited lately (its ``edited.ts``), for `KEPT_FOR` seconds
    of ``monotonic`` after it was heard, and of `MOST_KEPT` messages at most."""

    def __init__(self, *, kept_for: float = KEPT_FOR, most: int = MOST_KEPT,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._latest: OrderedDict[tuple[str, str], tuple[tuple[int, int], float]] = OrderedDict()
        """By (channel, ts): the latest edit's time, and when it was heard; least recently heard first."""
        self._kept_for, self._most, self._monotonic = kept_for, most, monotonic

    def outdated(self, message: dict[str, Any]) -> bool:
        """Whether a later edit of ``message`` (an `edited_message`) was heard than the one it carries."""
        when, latest = _edited_at(message), self._latest.get((message["channel"], message["ts"]))
        return when is not None and latest is not None and when < latest[0]

    def heard(self, message: dict[str, Any]) -> None:
        """``message``'s edit has come: from now on an earlier one is outdated, also while this one is still
        being handed over. One the gateway refuses is sent again by Slack, and is then no older than itself."""
        key, when, now = (message["channel"], message["ts"]), _edited_at(message), self._monotonic()
        if when is not None and (key not in self._latest or self._latest[key][0] < when):
            remember(self._latest, key, (when, now), self._most)
        while self._latest and now - next(iter(self._latest.values()))[1] >= self._kept_for:
            self._latest.popitem(last=False)


def _edited_at(message: dict[str, Any]) -> tuple[int, int] | None:
    edited = message.get("edited")
    try:
        return ts_key(str(edited["ts"])) if isinstance(edited, dict) and "ts" in edited else None
    except ValueError:  # no ts of Slack's: the edit is not ordered
        return None
