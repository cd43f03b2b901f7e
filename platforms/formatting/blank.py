"""Text a chat shows as nothing: whitespace, and the invisible characters Telegram takes for it.

Telegram refuses a message whose text, its formatting parsed, holds nothing else ("Bad Request:
message text is empty"); TDLib's ``strip_empty_characters`` (td/telegram/misc.cpp) decides, counting
as empty the spaces and the zero-width characters below besides whitespace. A reply that is blank
as written is no answer on any platform (`gateway.replies`); a part that renders blank is sent as
written (`markdown.Renderer.render`).
"""

from __future__ import annotations

import re

_BLANK = re.compile(
    "[\\s\u00a0\u1680\u180e\u2000-\u200f\u202e\u202f\u205f\u2800\u3000\ufeff\ufffc\U000e0000-\U000e007f]*")


def is_blank(text: str) -> bool:
    """``text`` shows nothing: it is empty, or only whitespace and invisible characters."""
    return _BLANK.fullmatch(text) is not None


def caption(markdown: str) -> str:
    """A file's caption as it goes: none (``""``) for one that shows nothing. Telegram would drop it,
    Discord and Slack show an empty line above the file, which a reader takes for a caption lost."""
    return "" if is_blank(markdown) else markdown
