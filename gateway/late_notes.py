"""Late replies say so.

A reply can reach its chat long after it was written: the platform was unreachable for a
while, or the gateway was down (what it had not sent goes out after the restart). Read
without a word of warning, an hours-old answer passes for a fresh one. So a message whose
first part the outbox sends ``delivery.late_after`` seconds or more after journaling it is
preceded by one short message saying how old it is (`note_text`). The note is journaled like
any other part, under the late part's key plus `SUFFIX`: it is sent once, and before the
message, also across restarts.

The other way round, a message can wait that long before its turn even begins: the gateway
was down when it came (it is handled after the restart), or it was set aside and handed back.
Its turn then opens with `picked_up_text`, quoting the start of the message, so the answer
that follows is not read as the answer to something newer. So does the reply of a turn that
the machine slept through as long (a laptop's lid closed mid-turn): the note goes right before it.

Progress messages (notices, cards) get no note: they are edited to their newest state anyway.
Neither do webhook deliveries: programs read them, and the note would read as the reply.
"""

from __future__ import annotations

from gateway.excerpt import literal, shorten

WITHOUT_NOTES = frozenset({"webhook"})
"""Platforms whose late messages go out without a note."""
SUFFIX = ":late"
"""Appended to the late part's key to make the note's."""
PICKED_UP = ":picked-up-late"
"""Appended to a turn's id to make the key of its note that the message waited (`picked_up_text`)."""


def opens_message(key: str) -> bool:
    """Whether an outbox key is a message's first part (``<key>:0``; re-split pieces are not)."""
    return key.endswith(":0")


def note_text(age_seconds: float) -> str:
    return f"⏱ Delivered late: what follows was written {age_text(age_seconds)} ago."


def picked_up_text(age_seconds: float, message: str) -> str:
    first = next(iter(message.strip().splitlines()), "").strip()  # a lone CR, too, ends a Markdown line
    # Shown as written (`literal`: the user's words, not Markdown), cut between whole characters (a flag
    # halved shows a stray letter) and never inside an escape.
    quote = shorten(literal(first), QUOTE_CHARS)
    return f"⏱ Answering your message from {age_text(age_seconds)} ago" + (f": “{quote}”" if quote else ".")


QUOTE_CHARS = 60
"""How much of the first line of a late-handled message its note quotes."""


def age_text(seconds: float) -> str:
    """``40 s``, ``12 min``, ``2 h 5 min``, ``3 days 4 h``: as precise as an age this large needs."""
    if seconds < 60:
        return f"{max(1, int(seconds))} s"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h" + (f" {minutes} min" if minutes else "")
    days, hours = divmod(hours, 24)
    return f"{days} day{'s' if days != 1 else ''}" + (f" {hours} h" if hours else "")
