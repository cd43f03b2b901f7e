"""`RepeatedWarnings`: a cause that recurs is logged once, then counted, and the count told."""

from __future__ import annotations

import asyncio
import logging
import re

import pytest

from platforms.repeated_warnings import RepeatedWarnings
from tests.polling import until

log = logging.getLogger("tests.repeated")


def test_a_cause_is_logged_once_per_window_and_the_next_line_counts_the_rest(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    warnings = RepeatedWarnings(log, window=600.0, clock=lambda: now[0])
    caplog.set_level(logging.WARNING, logger="tests.repeated")
    for second in range(0, 600, 6):  # a turn's typing refreshes, all refused for one reason
        now[0] = float(second)
        warnings.warning(("701", "Forbidden"), "typing in %s failed at %d s", "701", second)
    warnings.warning(("702", "Forbidden"), "typing in %s failed", "702")  # another cause: its own line
    now[0] = 600.0
    warnings.warning(("701", "Forbidden"), "typing in %s failed at %d s", "701", 600)
    assert [r.getMessage() for r in caplog.records] == [
        "typing in 701 failed at 0 s",
        "typing in 702 failed",
        "typing in 701 failed at 600 s (and 99 more like it in the last 600 s)",
    ]
    assert all(r.levelno == logging.WARNING for r in caplog.records)


def test_only_so_many_causes_are_remembered(caplog: pytest.LogCaptureFixture) -> None:
    warnings = RepeatedWarnings(log, window=600.0, clock=lambda: 0.0, causes=2)
    caplog.set_level(logging.WARNING, logger="tests.repeated")
    for cause in ("a", "b", "c", "a"):  # "a" was forgotten for "c": logged again, not counted
        warnings.warning(cause, "cause %s", cause)
    assert [r.getMessage() for r in caplog.records] == ["cause a", "cause b", "cause c", "cause a"]


async def test_a_burst_then_silence_has_its_count_told_as_the_window_closes(caplog: pytest.LogCaptureFixture) -> None:
    """A stranger's burst of refused requests, then nothing: the count waited for a next line that never came."""
    warnings = RepeatedWarnings(log, window=0.2)
    caplog.set_level(logging.WARNING, logger="tests.repeated")
    for n in range(5):
        warnings.warning("stranger", "request %d refused", n)
    warnings.warning("other", "another cause")  # alone in its window: nothing more to tell
    await until(lambda: len(caplog.records) >= 3, 5)
    warnings.warning("stranger", "request %d refused", 5)  # counted: a new window began with the count told
    told = [r.getMessage() for r in caplog.records]
    assert told[:2] == ["request 0 refused", "another cause"]
    assert re.fullmatch(r"request 4 refused \(and 3 more like it in the last 0 s\)", told[2])
    assert len(told) == 3

async def test_a_count_told_by_the_next_line_is_not_told_again(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    warnings = RepeatedWarnings(log, window=0.05, clock=lambda: now[0])
    caplog.set_level(logging.WARNING, logger="tests.repeated")
    warnings.warning("cause", "line %d", 0)
    warnings.warning("cause", "line %d", 1)
    now[0] = 1.0
    warnings.warning("cause", "line %d", 2)  # past the window: told here, with its count
    await asyncio.sleep(0.07)
    assert [r.getMessage() for r in caplog.records] == ["line 0", "line 2 (and 1 more like it in the last 1 s)"]
