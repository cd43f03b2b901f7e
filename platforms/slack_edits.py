"""A user's edit of their Slack message (``message_changed``), as the message now reads.

Apart from the adapter (`platforms.slack`) because it is pure translation: the event carries the whole
message as edited, which the adapter then reads as it reads a message (`platforms.slack_addressed`,
`platforms.slack_inbound.text_of`), so its chat, thread, ``ts`` and text are those the message was handed over
with. Slack also says ``message_changed`` of changes no one typed: a link's preview added (an unfurl), a thread's
reply counted, a pin; those leave the text as it was, and are no edit.
"""

from __future__ import annotations

from typing import Any


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
