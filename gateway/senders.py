"""Who said it: in a group, channel or thread the model reads each message with its sender.

Several people talk to the bot in one session there (`gateway.sessions`: the session is the
chat's), and the model would read their messages as one person's: it could not tell Bob's
question from Carol's, answer either by name, or know whose earlier request someone refers to.
So a message said where others talk too reaches the model as ``[@bob] how big is the release?``
— the name the platform vouches for (`Inbound.user_name`), else the user id — and so does the
answer to a question it asked (`gateway.questions`), which anyone there may give. A private chat's
messages reach it as written. What the chat sees, what the inbox keeps and what a question's
answer is matched against (an option's number) stay the message as written.
"""

from __future__ import annotations

from typing import Any

from platforms.base import Inbound


def for_model(text: str, event: Inbound | None) -> str:
    """``text``, a message of ``event``, as the model reads it (see the module docstring)."""
    if event is None or event.is_private:
        return text
    who = f"@{event.user_name.lstrip('@')}" if event.user_name else f"user {event.user_id}"
    return f"[{who}] {text}" if text else f"[{who}]"


def content_for_model(content: str | list[dict[str, Any]], event: Inbound) -> str | list[dict[str, Any]]:
    """`for_model` of a turn's input made of a message with files (`gateway.attachments.turn_input`):
    the text, or the text part that opens the parts of a message with pictures."""
    if isinstance(content, str):
        return for_model(content, event)
    return [{"type": "text", "text": for_model(content[0]["text"], event)}, *content[1:]]
