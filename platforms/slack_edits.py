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
The latest edit of a message handed to the gateway is also recorded in the gateway's store, beside the newest
message taken in per conversation (`LatestEdits.bind`, under `edit_key`): a restart forgot it, and an older
edit Slack sent the next process again (its answer cut off by the stop, or lost in the crash) was handed over
as the latest, the message still waiting for its turn then answered as it read before the later edit.
An edit may also come before its message: one sent on a Socket Mode connection gone half-open (or whose HTTP
request failed) comes again a minute later, the user's edit made meanwhile at once. The gateway, which has no such
message yet, takes no such edit; `LatestEdits.kept` keeps it, and the message, when it comes, is handed over as
edited (`LatestEdits.as_edited`). Answered as first written, the user's correction ("deploy to staging", not
"prod") was lost.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from platforms.base import SeenLookup, SeenRecorder
from platforms.recent import remember
from platforms.slack_catchup import ts_key

log = logging.getLogger("platforms.slack")

KEPT_FOR = 15 * 60.0
"""Seconds `LatestEdits` keeps a message's latest edit after hearing it: Slack sends an event it heard no answer to
again over about five minutes (at once, after a minute, after five), so an older edit may come that long after."""
MOST_KEPT = 10_000
"""Messages' latest edits `LatestEdits` keeps at most, however recent: more than Slack hands an app from one
workspace in `KEPT_FOR` (30,000 events an hour, past which it holds them back), so only memory is bounded by it."""
EARLY_KEPT = 1000
"""Edits the gateway did not take that `LatestEdits.kept` keeps at most, the most recent, for `KEPT_FOR` each:
their text, unlike a time, may be long, and nearly all of them are of messages answered already."""
_EDITED_PARTS = ("text", "blocks", "attachments", "edited")
"""What an edit changes of a message as the adapter reads it (`platforms.slack_inbound.text_of`, `mentioned`)."""
EDITED = "edited:"
"""How `edit_key` begins: no conversation's key does (`platforms.slack_catchup.conversation_key`)."""


def edit_key(channel: str, ts: str) -> str:
    """Where the gateway's store keeps the latest edit of message ``ts`` handed over (`LatestEdits.bind`)."""
    return f"{EDITED}{channel}/{ts}"


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


def deleted_message(event: dict[str, Any]) -> dict[str, Any] | None:
    """The message a user's deletion took away, shaped as its own ``message`` event came (its channel and channel
    type, its ``thread_ts`` but a parent's own), from ``message_deleted`` (``previous_message``, ``deleted_ts``) or
    from the ``message_changed`` that makes a thread's parent a tombstone (Slack keeps it, "This message was
    deleted.", for its replies); None for any other event, or a message of a bot."""
    if event.get("subtype") == "message_deleted":
        previous = event.get("previous_message")
        message = {**previous, "ts": event.get("deleted_ts", previous.get("ts"))} if isinstance(previous, dict) \
            else None
    else:
        message = event.get("message")
        if not isinstance(message, dict) or message.get("subtype") != "tombstone":
            return None
        previous = event.get("previous_message")
        # A tombstone is Slackbot's: whose the message was, the message before it says.
        message = {**message, "user": previous.get("user") if isinstance(previous, dict) else None}
    if message is None or not isinstance(message.get("ts"), str) or message.get("bot_id") or not message.get("user"):
        return None
    shaped = {**message, "channel": event["channel"], "channel_type": event.get("channel_type")}
    if shaped.get("thread_ts") == shaped["ts"]:
        del shaped["thread_ts"]
    return shaped


class LatestEdits:
    """The time of the latest edit heard of each message edited lately (its ``edited.ts``), for `KEPT_FOR` seconds
    of ``monotonic`` after it was heard, and of `MOST_KEPT` messages at most; and, once bound to the gateway's
    store (`bind`), that of each message whose edit was handed over, for good (the store forgets it with the
    conversations no message was seen in for a month)."""

    def __init__(self, *, kept_for: float = KEPT_FOR, most: int = MOST_KEPT, early: int = EARLY_KEPT,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._latest: OrderedDict[tuple[str, str], tuple[tuple[int, int], float]] = OrderedDict()
        """By (channel, ts): the latest edit's time, and when it was heard; least recently heard first."""
        self._untaken: OrderedDict[tuple[str, str], tuple[dict[str, Any], tuple[int, int], float]] = OrderedDict()
        """By (channel, ts): what the latest edit the gateway did not take made of the message, its time, and when
        it was kept; least recently kept first (`kept`)."""
        self._gone: OrderedDict[tuple[str, str], float] = OrderedDict()
        """By (channel, ts): when a deletion the gateway dropped nothing for was heard (`deleted_first`)."""
        self._kept_for, self._most, self._early, self._monotonic = kept_for, most, early, monotonic
        self._record: SeenRecorder | None = None
        self._stored: SeenLookup = lambda key: None

    def bind(self, record: SeenRecorder, stored: SeenLookup) -> None:
        """The gateway's store of positions (`platforms.base.CatchesUp.bind_last_seen`'s): ``record`` keeps an edit's
        time under its `edit_key`, committed with the gateway's record of the edit; ``stored`` reads it back."""
        self._record, self._stored = record, stored

    def outdated(self, message: dict[str, Any]) -> bool:
        """Whether a later edit of ``message`` (an `edited_message`) was heard than the one it carries, in this
        process or, handed over, in an earlier one."""
        when, key = _edited_at(message), (message["channel"], message["ts"])
        if when is None:
            return False
        if (latest := self._latest.get(key)) is not None and when < latest[0]:
            return True
        try:
            stored = self._stored(edit_key(*key))
            return stored is not None and when < ts_key(stored)
        except Exception:  # as if none were recorded: the edit goes to the gateway, as before a restart it did
            log.exception("slack: could not read the latest edit of message %s:%s handed over", *key)
            return False

    def heard(self, message: dict[str, Any]) -> None:
        """``message``'s edit has come: from now on an earlier one is outdated, also while this one is still
        being handed over. One the gateway refuses is sent again by Slack, and is then no older than itself."""
        key, when, now = (message["channel"], message["ts"]), _edited_at(message), self._monotonic()
        if when is not None and (key not in self._latest or self._latest[key][0] < when):
            remember(self._latest, key, (when, now), self._most)
        while self._latest and now - next(iter(self._latest.values()))[1] >= self._kept_for:
            self._latest.popitem(last=False)

    def kept(self, message: dict[str, Any]) -> None:
        """The gateway did not take ``message``'s edit (an `edited_message` for the bot): perhaps the message has
        not come yet. Kept for `as_edited`, unless a later edit of it was."""
        key, when, now = (message["channel"], message["ts"]), _edited_at(message), self._monotonic()
        if when is not None and (key not in self._untaken or self._untaken[key][1] < when):
            parts = {part: message[part] for part in _EDITED_PARTS if part in message}
            remember(self._untaken, key, (parts, when, now), self._early)
        while self._untaken and now - next(iter(self._untaken.values()))[2] >= self._kept_for:
            self._untaken.popitem(last=False)

    def as_edited(self, event: dict[str, Any]) -> dict[str, Any]:
        """A live message's event as the latest edit `kept` of it made it (Slack sent the edit first), or as it is."""
        early = self._untaken.get((str(event.get("channel")), str(event.get("ts"))))
        if early is None or self._monotonic() - early[2] >= self._kept_for:
            return event
        log.debug("slack: message %s:%s came after its edit; handed over as edited", event["channel"], event["ts"])
        return {**{k: v for k, v in event.items() if k not in _EDITED_PARTS}, **early[0]}

    def deleted_first(self, message: dict[str, Any]) -> None:
        """The gateway dropped nothing for ``message``'s deletion (a `deleted_message`): perhaps the message has not
        come yet (Slack does not order events). Kept for `gone`, as `kept` keeps an edit."""
        now = self._monotonic()
        remember(self._gone, (message["channel"], message["ts"]), now, self._early)
        while self._gone and now - next(iter(self._gone.values())) >= self._kept_for:
            self._gone.popitem(last=False)

    def gone(self, event: dict[str, Any]) -> bool:
        """Whether a live message's event comes after its deletion (`deleted_first`): not to be handed over."""
        heard = self._gone.get((str(event.get("channel")), str(event.get("ts"))))
        return heard is not None and self._monotonic() - heard < self._kept_for

    def handing_over(self, message: dict[str, Any]) -> None:
        """``message`` (an edit heard, or a message read back as edited) goes to the gateway: its edit's time is
        recorded in the store, unless a later one was, for a later process to pass over an older edit."""
        self.heard(message)
        if self._record is None or _edited_at(message) is None or self.outdated(message):
            return
        try:
            self._record(edit_key(message["channel"], message["ts"]), str(message["edited"]["ts"]))
        except Exception:  # the gateway's record of the edit fails with it, and Slack sends the edit again
            log.exception("slack: could not record the latest edit of message %s:%s", message["channel"],
                          message["ts"])


def _edited_at(message: dict[str, Any]) -> tuple[int, int] | None:
    edited = message.get("edited")
    try:
        return ts_key(str(edited["ts"])) if isinstance(edited, dict) and "ts" in edited else None
    except ValueError:  # no ts of Slack's: the edit is not ordered
        return None
