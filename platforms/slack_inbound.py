"""The `Inbound` a Slack message the bot takes becomes, and the conversations it is the newest
message of once the gateway has it.

Apart from the adapter (`platforms.slack`) because it is pure translation, the same for a live
message and one a catch-up reads, as `platforms.discord_inbound` is Discord's; which messages the
bot takes is `platforms.slack_addressed`. The adapter reads the message's files, keeps the
threads it is in and looks up the handles of the users it mentions (`mentioned`,
`platforms.slack_names`), and hands them in.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass
from typing import Any

from platforms import slack_text
from platforms.base import Attachment, Inbound
from platforms.slack_addressed import Addressed
from platforms.slack_blocks import blocks_text
from platforms.slack_catchup import Where


@dataclass(frozen=True)
class Taken:
    """A message the bot takes, as the adapter hands it on and records it taken in."""

    inbound: Inbound
    ts: str
    conversations: tuple[Where, ...]
    """Where it becomes the newest message taken in (`platforms.slack_catchup`)."""


def conversations_of(event: dict[str, Any], addressed: Addressed, *,
                     threads: Container[tuple[str, str]]) -> tuple[Where, ...]:
    """The conversations a message the bot takes (``addressed``) is the newest message of once taken:
    where it was posted, and the thread a mention opens; none for a text command in a thread the bot
    is not in (``threads``). Known before its files are read, so that the adapter can hold them for it."""
    channel, thread = event["channel"], addressed.thread
    posted: Where = (channel, event.get("thread_ts"))
    if thread is not None and (channel, thread) not in threads:
        return ()  # "!help" in people's thread: nothing there to catch up on later
    return (posted, (channel, thread)) if thread is not None and posted != (channel, thread) else (posted,)


def taken_of(platform: str, event: dict[str, Any], addressed: Addressed, attachments: tuple[Attachment, ...],
             conversations: tuple[Where, ...], names: Mapping[str, str] = slack_text.NO_NAMES) -> Taken:
    """The `Inbound` for a message the bot takes (``addressed``), and its `conversations_of`; its text read
    with ``names`` (`text_of`). Its ``message_id`` is its ``ts``, by which an edit names it (`platforms.slack_edits`);
    Slack has no quoting for answers to use it."""
    channel, ts = event["channel"], event["ts"]
    inbound = Inbound(
        platform=platform, chat_id=channel, thread_id=addressed.thread, user_id=event["user"], user_name=None,
        text=text_of(event, addressed, names), event_id=f"{channel}:{ts}", is_private=addressed.private,
        attachments=attachments, sent_at=float(ts), message_id=ts,
    )
    return Taken(inbound, ts, conversations)


def text_of(event: dict[str, Any], addressed: Addressed, names: Mapping[str, str] = slack_text.NO_NAMES) -> str:
    """What the model reads of a message the bot takes (``addressed``): a message's and its edit's alike, each user
    it mentions by the handle ``names`` gives their id (`platforms.slack_names`), or as Slack wrote it."""
    # Blocks alone (no ``text``): a message an app posted for the user. Read as its empty text, an empty turn.
    written = addressed.text if event.get("text") else blocks_text(event.get("blocks"))
    return slack_text.with_forwarded(slack_text.readable(written, names), event.get("attachments"), names)


def mentioned(event: dict[str, Any]) -> set[str]:
    """The ids of the users a message mentions where `text_of` reads it: in its text (or blocks) and in the
    messages it forwards. The bot's own mention included: the adapter knows its handle."""
    written = [event.get("text") or blocks_text(event.get("blocks"))]
    written += (str(item.get("text") or "") for item in slack_text.forwarded(event.get("attachments")))
    return set().union(*(slack_text.mentioned(text) for text in written))
