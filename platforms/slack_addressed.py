"""Which Slack messages the bot takes, and how: its session's thread, and the text without the mention.

Apart from the adapter (`platforms.slack`) because it is pure translation, the same for a live
message and one a catch-up reads; the adapter keeps what it needs to know (the bot's user and
mention, the threads it is in, the text commands) and hands it in.
"""

from __future__ import annotations

import re
from collections.abc import Container
from dataclasses import dataclass
from typing import Any

from platforms.formatting.blank import is_blank, trimmed
from platforms.slack_blocks import blocks_text
from platforms.slack_text import forwarded

_KEEP_SUBTYPES = {None, "file_share", "thread_broadcast"}


@dataclass(frozen=True)
class Addressed:
    """How the bot takes a message (`addressed`)."""

    thread: str | None
    """The session's thread: the message's, or the one a mention in a channel starts; None in a DM."""
    private: bool
    text: str
    """Without the mention; "" for text that shows nothing (`is_blank`)."""
    mentioned: bool


def addressed(event: dict[str, Any], bot_user_id: str | None, mention: re.Pattern[str] | None, *,
              threads: Container[tuple[str, str]], text_commands: Container[str]) -> Addressed | None:
    """How the bot takes a message: None for what it does not answer (another subtype, a bot's,
    a channel message neither mentioning it nor in its thread, text that shows nothing, only zero-width
    spaces and the like, with no file or forward: a turn of the model answering what no one could read).
    ``mention`` matches the bot's mention, known once the adapter started."""
    user = event.get("user")
    if event.get("subtype") not in _KEEP_SUBTYPES or event.get("bot_id") or not user or user == bot_user_id:
        return None
    channel, ts, text = event["channel"], event["ts"], event.get("text") or ""
    thread_ts = event.get("thread_ts")
    private = event.get("channel_type") == "im" or channel.startswith("D")
    assert mention is not None
    mentioned = bool(mention.search(text))
    # Only the spaces around a mention go: the lines and indentation of code the user pasted stay.
    text = mention.sub(" ", text).strip() if mentioned else text.strip()
    if is_blank(text):
        # A mention alone calls the bot, a file or a forward is what was sent: none of these is nothing. Else what
        # shows is the blocks (an app's, posted for the user, beside a fallback text that shows nothing or none).
        if not (mentioned or event.get("files") or any(forwarded(event.get("attachments")))):
            if is_blank(words := blocks_text(event.get("blocks"))):
                return None  # spaces alone too (a no-break one), which the strip above left as ""
            text = words.strip() if event.get("text") else ""  # with no text, `text_of` reads the blocks itself
        else:
            text = ""
    if private:
        return Addressed(None, private, text, mentioned)
    if mentioned:
        return Addressed(thread_ts or ts, private, text, mentioned)
    if thread_ts and ((channel, thread_ts) in threads or is_text_command(text, text_commands)):
        return Addressed(thread_ts, private, text, mentioned)
    return None


def is_text_command(text: str, text_commands: Container[str]) -> bool:
    """``!name`` or ``!name args``, any case: what the gateway's command parser accepts (invisible characters glued
    on too, ``!stop`` and a zero-width space: `gateway.commands.parse`)."""
    words = trimmed(text).split(maxsplit=1)
    return bool(words) and trimmed(words[0]).lower() in text_commands
