"""A configured value as an error may print it: the error goes to a terminal or a log, where a raw control
character ends its line or moves the cursor, U+202E turns the rest of it around, and half of a UTF-16 pair cannot
be printed at all."""

from __future__ import annotations

import json


def escaped(text: str) -> str:
    """``text`` quoted as JSON, every character that does not print escaped (``"\\u001b"``, ``"\\u202e"``)."""
    return "".join(char if char.isprintable() else (f"\\u{ord(char):04x}" if ord(char) < 0x10000 else
                   f"\\U{ord(char):08x}") for char in json.dumps(text, ensure_ascii=False))


def key_part(name: str) -> str:
    """A name the operator chose, as part of a key in an error (``delegation.model_map.<name>``): as written when it
    prints, else `escaped`."""
    return name if name.isprintable() else escaped(name)
