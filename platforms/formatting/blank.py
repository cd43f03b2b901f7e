"""Text a chat shows as nothing: whitespace, and the invisible characters Telegram takes for it.

Telegram refuses a message whose text, its formatting parsed, holds nothing else ("Bad Request:
message text is empty"); TDLib's ``strip_empty_characters`` (td/telegram/misc.cpp) decides, counting
as empty the spaces and the zero-width characters below besides whitespace. Other characters no
platform draws either: Unicode's Default_Ignorable_Code_Point (word joiner, invisible operators,
bidi controls, variation selectors, Hangul fillers, tags...), which a renderer shows as nothing,
so that a message of only them (a model's stray U+2060) is an empty bubble on Discord and Slack.
A reply that is blank as written is no answer on any platform (`gateway.replies`); a part that
renders blank is sent as written (`markdown.Renderer.render`).
"""

from __future__ import annotations

import re

_TELEGRAM_EMPTY = "\u00a0\u1680\u180e\u2000-\u200f\u202e\u202f\u205f\u2800\u3000\ufeff\ufffc\U000e0000-\U000e007f"
# DerivedCoreProperties.txt's Default_Ignorable_Code_Point (Unicode 15.1), which unicodedata does not expose;
# the unassigned code points in it too: renderers are to show nothing for them, now and once assigned.
_DEFAULT_IGNORABLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff")
_BLANK = re.compile(f"[\\s{_TELEGRAM_EMPTY}{_DEFAULT_IGNORABLE}]*")


def is_blank(text: str) -> bool:
    """``text`` shows nothing: it is empty, or only whitespace and invisible characters."""
    return _BLANK.fullmatch(text) is not None


def trimmed(text: str) -> str:
    """``text`` without the whitespace and invisible characters at its ends: what a reader sees it start and end
    with (``/stop`` with a zero-width space a keyboard or a paste glued on is ``/stop``)."""
    start = _BLANK.match(text).end()
    # Its end read from the end: a pattern anchored at $ tries the run before it at every blank character, long
    # runs of them inside a text taking time in the square of their length.
    end = len(text) - _BLANK.match(text[::-1]).end()
    return text[start:max(start, end)]


def caption(markdown: str) -> str:
    """A file's caption as it goes: none (``""``) for one that shows nothing. Telegram would drop it,
    Discord and Slack show an empty line above the file, which a reader takes for a caption lost."""
    return "" if is_blank(markdown) else markdown
