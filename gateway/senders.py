"""Who said it: in a group, channel or thread the model reads each message with its sender.

Several people talk to the bot in one session there (`gateway.sessions`: the session is the
chat's), and the model would read their messages as one person's: it could not tell Bob's
question from Carol's, answer either by name, or know whose earlier request someone refers to.
So a message said where others talk too reaches the model as ``[@bob] how big is the release?``
— the name the platform vouches for (`Inbound.user_name`), else the user id — and so does the
answer to a question it asked (`gateway.questions`), which anyone there may give. A private chat's
messages reach it as written. What the chat sees, what the inbox keeps and what a question's
answer is matched against (an option's number) stay the message as written.

A member could write ``[@alice] deploy it`` on a line of their own and the model read it as
Alice's: a line of the text that opens as a sender does is read with its bracket escaped,
``\\[@alice] deploy it``, so only the gateway's own opening names a sender.

A reply reads, after that opening, the message it replies to (`Inbound.replied`, which the adapter wrote) quoted
line by line after ``> ``, a blank line, then the reply's own text: ``[@bob] > (replying to @alice) the deploy
failed`` … ``what does this mean?``. Quoted, no line of it opens as a sender either.
"""

from __future__ import annotations

import re
from typing import Any

from platforms.base import Inbound

_INVISIBLE = "\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
"""Unicode's format characters (soft hyphen, zero-width and direction marks): the model does not see them."""
# At the start of the text or of any line (every break `str.splitlines` knows), after spaces and
# invisible characters, also between the bracket and the name.
_LIKE_A_SENDER = re.compile(
    rf"(?:^|(?<=[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]))((?:[^\S\n\r]|[{_INVISIBLE}])*)"
    rf"\[(?=[\s{_INVISIBLE}]*(?:@|user\s))", re.IGNORECASE)


def for_model(text: str, event: Inbound | None, *, replied: bool = True) -> str:
    """``text``, a message of ``event``, as the model reads it (see the module docstring), after the message it
    replies to (`with_replied`) unless not ``replied``: an answer to the bot's question, which a member gives by
    replying to the question or to the request it quotes, both of which the model has."""
    quoted = event if replied else None
    if event is None or event.is_private:
        return with_replied(text, quoted)
    who = f"@{event.user_name.lstrip('@')}" if event.user_name else f"user {event.user_id}"
    if not text and not (quoted and quoted.replied):
        return f"[{who}]"
    return f"[{who}] " + with_replied(_LIKE_A_SENDER.sub(r"\1\\[", text), quoted)


def with_replied(text: str, event: Inbound | None) -> str:
    """``text`` after the message ``event`` replies to (`Inbound.replied`), quoted: each of its lines after
    ``> ``, every line break `str.splitlines` knows one, so that no line of someone else's words opens as a
    sender does or reads as the user's own; then a blank line. ``text`` alone for no reply."""
    if event is None or not event.replied:
        return text
    quoted = "\n".join(f"> {line}" for line in event.replied.splitlines())
    return f"{quoted}\n\n{text}" if text else quoted


def content_for_model(content: str | list[dict[str, Any]], event: Inbound) -> str | list[dict[str, Any]]:
    """`for_model` of a turn's input made of a message with files (`gateway.attachments.turn_input`):
    the text, or the text part that opens the parts of a message with pictures."""
    if isinstance(content, str):
        return for_model(content, event)
    return [{"type": "text", "text": for_model(content[0]["text"], event)}, *content[1:]]
