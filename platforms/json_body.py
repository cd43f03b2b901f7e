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

_NOT_JSON = "body is not valid UTF-8 JSON"
"""How every refusal of `load_json_body` but one (a number too long) starts; what was wrong, and where, follows."""


def load_json_body(body: bytes) -> object:
    """The parsed body; ValueError with a message fit for the caller (no body echoed), saying
    what is wrong and where: ``body is not valid UTF-8 JSON: <what>``.

    NaN, Infinity and -Infinity, which Python's json reads but JSON does not have, are refused
    as not JSON. A leading byte order mark is skipped.
    """
    unmarked = body.removeprefix(codecs.BOM_UTF8)
    try:
        text = unmarked.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + len(body) - len(unmarked)  # of the body as sent
        # Windows PowerShell 5's Out-File and Set-Content write UTF-16 by default.
        wide = f" (it is {encoding}: send UTF-8)" if (encoding := _wide(body)) else ""
        raise ValueError(f"{_NOT_JSON}: the byte at offset {offset} is not UTF-8{wide}") from None
    if not text.strip(" \t\r\n"):  # JSON's whitespace
        raise ValueError(f"{_NOT_JSON}: the body is empty")
    try:
        return json.loads(text, parse_constant=_no_constant, parse_int=_read_int)
    except _NumberTooLong:
        raise ValueError(f"body has a number too long to read (over {sys.get_int_max_str_digits()} digits)") from None
    except json.JSONDecodeError as exc:
        if wide := _wide(unmarked):
            # Without a byte order mark, UTF-16's NUL bytes decode as UTF-8: the parser's words ("Expecting
            # property name ... column 2") sent the caller looking for a quoting mistake it had not made.
            raise ValueError(f"{_NOT_JSON}: it is {wide}: send UTF-8") from None
        # Its message is the parser's own ("Expecting value"), never the text: a position, no content.
        raise ValueError(f"{_NOT_JSON}: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:  # `_no_constant`
        raise ValueError(f"{_NOT_JSON}: {exc}") from None
    except RecursionError:
        raise ValueError(f"{_NOT_JSON}: nested too deeply") from None


def _wide(body: bytes) -> str | None:
    """``"UTF-16"`` or ``"UTF-32"`` for a body in either, told by its byte order mark or, without one, by where
    the NUL bytes of its first (ASCII) characters fall (RFC 4627, section 3); else None."""
    if body[:4] in (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE):
        return "UTF-32"
    if body[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return "UTF-16"
    nuls = tuple(b == 0 for b in body[:4])
    if nuls in ((True, True, True, False), (False, True, True, True)):
        return "UTF-32"
    if nuls in ((True, False, True, False), (False, True, False, True)):
        return "UTF-16"
    return None


class _NumberTooLong(ValueError):
    """Valid JSON that Python will not turn into an int (its int-string conversion limit)."""


def _read_int(digits: str) -> int:
    try:
        return int(digits)
    except ValueError:
        raise _NumberTooLong from None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")
