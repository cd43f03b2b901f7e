"""A count told as its window closes names its exception, in the log as on the console: lines of one message that
differ in their exception are kinds apart, and their counts, without it, read alike ("send failed (and 3 more …)"
twice), the console's too, once the first line of each, with its traceback, was gone from its fifty."""

from __future__ import annotations

import io
import json
import logging

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.console.recent_errors import RecentErrors
from gateway.log_repeats import _last_line
from gateway.logging import logging_installed

log = logging.getLogger("gateway.test.counts_exception")


def _send_failed(error: Exception) -> None:
    try:
        raise error
    except Exception:
        log.warning("send failed", exc_info=True)


def _burst(now: list[float]) -> None:
    for _ in range(3):
        _send_failed(ConnectionError("refused"))
        _send_failed(TimeoutError("timed out"))
        now[0] += 1


def test_a_count_told_as_its_window_closes_names_its_exception_in_the_log_and_on_the_console() -> None:
    now = [0.0]
    stream = io.StringIO()
    recent = RecentErrors(repeat_window=30)
    recent._repeats._clock = lambda: now[0]
    recent.attach()
    try:
        with logging_installed("INFO", "text", stream, repeat_window=30) as handler:
            handler.repeats._clock = lambda: now[0]
            _burst(now)
            now[0] = 30.0
            handler.repeats.flush()
            recent._repeats.flush()
    finally:
        recent.detach()
    lines = stream.getvalue().splitlines()
    counts = [i for i, line in enumerate(lines) if "more like it" in line]
    assert len(counts) == 2 and all(": send failed (and 1 more like it in the last " in lines[i] for i in counts)
    # The exception's line, not the traceback, which each kind's first line had.
    assert sorted(lines[i + 1:i + 2] for i in counts) == [["  ConnectionError: refused"], ["  TimeoutError: timed out"]]
    assert stream.getvalue().count("Traceback") == 2
    # The console says of each what the log does.
    told = [lines[i].split(": ", 1)[1] for i in counts]
    assert sorted((e["message"], e.get("exception")) for e in recent.entries() if "more like it" in e["message"]) == [
        (told[0], "ConnectionError: refused"), (told[1], "TimeoutError: timed out")]


def test_a_json_count_has_its_exception_too() -> None:
    now = [0.0]
    stream = io.StringIO()
    with logging_installed("INFO", "json", stream, repeat_window=30) as handler:
        handler.repeats._clock = lambda: now[0]
        _burst(now)
    told = [json.loads(line) for line in stream.getvalue().splitlines()]
    counts = [entry for entry in told if "more like it" in entry["msg"]]
    assert sorted(entry["exc"] for entry in counts) == ["ConnectionError: refused", "TimeoutError: timed out"]


@settings(max_examples=300)
@given(st.text(st.sampled_from("ab \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2028\u2029\u3000"), max_size=30))
def test_the_exception_line_is_the_one_the_console_keeps(text: str) -> None:
    # Found from the traceback's end, it is the console's line of the whole, whatever line breaks it holds.
    assert _last_line(text) == (text.strip().splitlines()[-1] if text.strip() else None)


def _told_exceptions(errors: list) -> list[list[str]]:
    """The lines below each count line, of ``errors`` (makers of an exception) each logged three times."""
    now = [0.0]
    stream = io.StringIO()
    with logging_installed("INFO", "text", stream, repeat_window=30) as handler:
        handler.repeats._clock = lambda: now[0]
        for error in errors:
            for _ in range(3):
                _send_failed(error())
        now[0] = 30.0
        handler.repeats.flush()
    lines = stream.getvalue().splitlines()
    counts = [i for i, line in enumerate(lines) if "more like it" in line]
    told = []
    for i in counts:
        below = []
        for line in lines[i + 1:]:
            if not line.startswith("  "):
                break
            below.append(line)
        told.append(below)
    return told


def _noted(message: str, note: str) -> Exception:
    error = KeyError(message)
    error.add_note(note)
    return error


def test_a_count_names_its_exception_when_the_traceback_does_not_end_with_it() -> None:
    # An exception group's traceback ends with its box; a message of several lines, or a note, with those: the
    # counts of kinds apart read alike, and none named its exception.
    told = _told_exceptions([lambda: ExceptionGroup("batch one failed", [ValueError("a")]),
                             lambda: ExceptionGroup("batch two failed", [ValueError("a")]),
                             lambda: ValueError("chat 41\nretry later"), lambda: ValueError("chat 42\nretry later"),
                             lambda: _noted("chat 43", "see the outbox")])
    assert len(told) == 5 and len({tuple(below) for below in told}) == 5, told
    assert [below[0] for below in told] == [
        "  ExceptionGroup: batch one failed (1 sub-exception)", "  ExceptionGroup: batch two failed (1 sub-exception)",
        "  ValueError: chat 41", "  ValueError: chat 42", "  KeyError: 'chat 43'"]


def test_a_counts_exception_is_masked_as_the_first_lines_traceback() -> None:
    from gateway.logging import register_secret

    secret = "hunter2-counted-secret-value"
    register_secret(secret)
    told = _told_exceptions([lambda: ConnectionError(f"refused with {secret}"),
                             lambda: ExceptionGroup(f"group {secret}", [ValueError(secret)])])
    assert len(told) == 2 and not any(secret in line for below in told for line in below), told
    assert told[0] == ["  ConnectionError: refused with ***"]
