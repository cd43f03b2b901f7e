"""A count told as its window closes has the time it is written, in the log (text and JSON) and on the console, and
says its span up to then: with the time of the last line it counted, it stood up to a window before the lines
written ahead of it ("12:00:05 … (and 3 more like it in the last 4 s)" after "12:00:20 …"), and the console's
newest entry was older than the one below it."""

from __future__ import annotations

import io
import json
import logging
import time

from gateway.console.recent_errors import RecentErrors
from gateway.logging import logging_installed

log = logging.getLogger("gateway.test.counts_time")


def _dropped_long_ago(at: float) -> None:
    """"platform down", as logged ``at`` (the wall clock's seconds): lines the filter drops, made as they were then."""
    log.handle(logging.makeLogRecord({"name": log.name, "levelno": logging.WARNING, "levelname": "WARNING",
                                      "msg": "platform down", "created": at, "msecs": (at % 1) * 1000}))


def _logged(fmt: str, stream: io.StringIO, recent: RecentErrors) -> None:
    now = [0.0]
    recent._repeats._clock = lambda: now[0]
    with logging_installed("INFO", fmt, stream, repeat_window=30) as handler:
        handler.repeats._clock = lambda: now[0]
        started = time.time() - 25
        for second in range(5):  # a burst 25 s ago, then silence
            now[0] = float(second)
            _dropped_long_ago(started + second)
        now[0] = 25.0
        log.warning("another line")  # written now, before the burst's window closes
        now[0] = 30.0
        handler.repeats.flush()
        recent._repeats.flush()


def test_a_count_is_written_in_order_with_its_span_up_to_then() -> None:
    stream = io.StringIO()
    recent = RecentErrors(repeat_window=30)
    recent.attach()
    try:
        _logged("text", stream, recent)
    finally:
        recent.detach()
    lines = [line for line in stream.getvalue().splitlines() if "gateway.test.counts_time" in line]
    stamps = [line[:19] for line in lines]  # "YYYY-MM-DD HH:MM:SS"
    assert stamps[0] < stamps[1] <= stamps[2], lines
    assert [line.split(": ", 1)[1] for line in lines] == [
        "platform down", "another line", "platform down (and 3 more like it in the last 30 s)"]
    entries = recent.entries()  # newest first
    assert [e["message"] for e in entries] == ["platform down (and 3 more like it in the last 30 s)", "another line",
                                               "platform down"]
    assert entries[0]["time"] >= entries[1]["time"] > entries[2]["time"] + 20


def test_a_json_count_is_written_in_order() -> None:
    stream = io.StringIO()
    recent = RecentErrors(repeat_window=30)
    _logged("json", stream, recent)
    told = [json.loads(line) for line in stream.getvalue().splitlines()]
    ours = [entry for entry in told if entry["logger"] == "gateway.test.counts_time"]
    assert ours[0]["ts"] < ours[1]["ts"] <= ours[2]["ts"], ours
    assert [entry["msg"] for entry in ours] == [
        "platform down", "another line", "platform down (and 3 more like it in the last 30 s)"]
