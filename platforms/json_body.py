"""Reading a request's JSON body, for the HTTP platforms (webhook, web chat).

One place so that both tell a caller the same true thing about a body Python will
not read: valid JSON whose whole number is longer than Python's int-string
conversion limit (4300 digits by default) is not "not valid JSON". Nor is JSON that
starts with a UTF-8 byte order mark, which some Windows tools write (Windows
PowerShell's ``Out-File -Encoding utf8``): RFC 8259 lets a reader ignore it, and
Python's own ``json.loads`` of bytes does.
"""

from __future__ import annotations

import codecs
import json
import sys


def load_json_body(body: bytes) -> object:
    """The parsed body; ValueError with a message fit for the caller (no body echoed).

    NaN, Infinity and -Infinity, which Python's json reads but JSON does not have, are refused
    as not JSON. A leading byte order mark is skipped.
    """
    try:
        text = body.removeprefix(codecs.BOM_UTF8).decode("utf-8")
        return json.loads(text, parse_constant=_no_constant, parse_int=_read_int)
    except _NumberTooLong:
        raise ValueError(f"body has a number too long to read (over {sys.get_int_max_str_digits()} digits)") from None
    except (ValueError, RecursionError):
        raise ValueError("body is not valid UTF-8 JSON") from None


class _NumberTooLong(ValueError):
    """Valid JSON that Python will not turn into an int (its int-string conversion limit)."""


def _read_int(digits: str) -> int:
    try:
        return int(digits)
    except ValueError:
        raise _NumberTooLong from None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")
