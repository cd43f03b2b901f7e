"""A log line quoting a stranger's text keeps the separators and direction marks that viewers obey as escapes:
U+2028/U+2029 break the line in editors and in Python's ``splitlines`` (a second line that reads as a record of
its own), and a right-to-left override shows the rest of the line reversed in a browser's log viewer."""

from __future__ import annotations

import json
import logging

import pytest

from gateway.logging import JsonFormatter, TextFormatter

HOSTILE = "alice\u20282026-01-01 00:00:00 ERROR gateway: forged\u2029x\u202egnp.exe\u2066y\u2069"


def record(text: str) -> logging.LogRecord:
    return logging.LogRecord("gateway.test", logging.INFO, __file__, 1, "user said %s", (text,), None)


@pytest.mark.parametrize("formatter", [TextFormatter("%(message)s"), JsonFormatter()], ids=["text", "json"])
def test_line_separators_and_direction_overrides_are_written_as_escapes(formatter: logging.Formatter) -> None:
    line = formatter.format(record(HOSTILE))
    assert len(line.splitlines()) == 1, line
    assert not any(c in line for c in "\u2028\u2029\u202e\u2066\u2069"), ascii(line)
    shown = json.loads(line)["msg"] if isinstance(formatter, JsonFormatter) else line
    # Still readable as what was sent: Python's (and JSON's) own escape for each.
    assert "\\u2028" in line and "\\u202e" in line, shown
