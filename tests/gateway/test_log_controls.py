"""Control characters in log lines: shown as escapes, never obeyed by the terminal the log is read on.

A line quoting a model's, a tool's or a user's text (`switchboard chat --verbose`, `switchboard run` on a
terminal, ``journalctl`` showing raw bytes) carried escape sequences that cleared the operator's screen or
retitled the window, and a line break followed by a fake prefix read as a record of its own."""

from __future__ import annotations

import io
import json
import logging
import re

import pytest

from gateway.logging import logging_installed

log = logging.getLogger("gateway.test_controls")

EVIL = "a\x1b]0;pwned\x07b\x1b[2J\x9b1mc\x7f\r\n2026-11-30 12:00:00 ERROR gateway.fake: forged\tend"
RECORD_START = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z]+ ")


def test_a_text_line_shows_the_control_characters_of_its_message_and_arguments_as_escapes():
    stream = io.StringIO()
    with logging_installed("INFO", "text", stream, repeat_window=0):
        log.warning("model said " + EVIL)
        log.warning("tool said %s", EVIL)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2, lines
    shown = (r"a\x1b]0;pwned\x07b\x1b[2J\x9b1mc\x7f\r\n2026-11-30 12:00:00 ERROR gateway.fake: forged" "\tend")
    assert lines[0].endswith("WARNING gateway.test_controls: model said " + shown)
    assert lines[1].endswith("WARNING gateway.test_controls: tool said " + shown)


def test_a_traceback_keeps_its_lines_but_only_the_record_starts_at_the_margin():
    """An exception's message quoting foreign text is part of the traceback: its line breaks cannot be told from
    the traceback's own, so every line after the record's first is indented, and its controls are escapes."""
    stream = io.StringIO()
    with logging_installed("INFO", "text", stream, repeat_window=0):
        try:
            raise ValueError("bad input " + EVIL)
        except ValueError:
            log.exception("the tool failed")
        log.info("stack", stack_info=True)
    lines = stream.getvalue().splitlines()
    starts = [line for line in lines if RECORD_START.match(line)]
    assert [line[20:] for line in starts] == ["ERROR gateway.test_controls: the tool failed",
                                              "INFO gateway.test_controls: stack"]
    assert all(line.startswith("  ") for line in lines if line not in starts)
    assert "  Traceback (most recent call last):" in lines
    assert r"  ValueError: bad input a\x1b]0;pwned\x07b\x1b[2J\x9b1mc\x7f\r" in lines
    assert "  2026-11-30 12:00:00 ERROR gateway.fake: forged\tend" in lines
    assert "  Stack (most recent call last):" in lines
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", stream.getvalue())


@pytest.mark.parametrize("with_exception", [False, True])
def test_a_json_line_escapes_every_control_character(with_exception):
    """JSON escapes C0 controls itself, but not DEL and the C1 ones: U+009B is CSI to a terminal."""
    stream = io.StringIO()
    with logging_installed("INFO", "json", stream, repeat_window=0):
        try:
            raise ValueError(EVIL)
        except ValueError:
            log.error("said %s", EVIL, exc_info=with_exception)
    text = stream.getvalue()
    assert text.count("\n") == 1 and not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), repr(text)
    entry = json.loads(text)
    assert entry["msg"] == "said " + EVIL  # the text itself, for whatever reads the JSON
    assert (EVIL in entry["exc"]) if with_exception else "exc" not in entry


def test_a_line_logged_after_the_log_is_closed_shows_its_control_characters_too(capsys):
    """Python's last-resort handler writes it bare on stderr (a finaliser at exit): still shown, not obeyed."""
    with logging_installed("INFO", "text", io.StringIO()):
        pass
    logging.lastResort.handle(log.makeRecord(log.name, logging.WARNING, __file__, 1, "left %s", (EVIL,), None))
    assert capsys.readouterr().err == "left " + repr(EVIL)[1:-1].replace("\\t", "\t") + "\n"
