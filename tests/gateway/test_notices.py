"""Notice texts: every notice reads differently from the one before, and each turn's ends in one line."""

from __future__ import annotations

import pytest

from gateway.notices import final_text, format_elapsed


@pytest.mark.parametrize(("seconds", "interval", "text"), [
    (5, 5, "5 s"), (59, 1, "59 s"), (0.25, 0.05, "0.25 s"), (60, 30, "1 min"), (90, 30, "1 min 30 s"),
    (120, 30, "2 min"), (540, 180, "9 min"), (60.5, 0.5, "1 min 0.5 s"),
])
def test_elapsed_time_reads_in_seconds_then_minutes_and_seconds(seconds, interval, text):
    assert format_elapsed(seconds, interval) == text


@pytest.mark.parametrize("interval", [0.1, 1, 7, 30, 45, 180])
def test_consecutive_notices_never_read_the_same(interval):
    texts = [format_elapsed(n * interval, interval) for n in range(1, 200)]
    assert all(a != b for a, b in zip(texts, texts[1:]))


def test_a_finished_turn_says_how_it_ended_in_one_line():
    assert final_text("done", 42) == "✓ Done in 42 s"
    assert final_text("done", 150) == "✓ Done in 2 min 30 s"
    assert final_text("stopped", 3) == "⏹ Stopped"
    assert final_text("failed", 3) == "⚠️ Failed"


def test_a_done_line_says_how_its_subagents_ended_when_not_all_succeeded():
    assert final_text("done", 120, subagents=3) == "✓ Done in 2 min · 3 subagents"
    assert final_text("done", 120, subagents=3, endings="1 failed, 2 interrupted") == (
        "✓ Done in 2 min · 3 subagents (1 failed, 2 interrupted)")
    assert final_text("stopped", 3, subagents=3, endings="1 failed") == "⏹ Stopped"
