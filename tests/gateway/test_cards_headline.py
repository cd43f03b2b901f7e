"""The card's headline time: whole seconds as a notice's (`59 s`, `1 min`, `1 min 5 s`), never `60 s` or
`61 s`, and never going back as the turn runs on."""

from __future__ import annotations

import re

from agent.testing import FakeClock
from gateway.progress_card import ProgressCard


def test_the_headline_reads_whole_seconds_then_minutes_and_never_goes_back():
    clock = FakeClock(autojump=False)
    card = ProgressCard(delay=0, heartbeat=60, mode=True, clock=clock, publish=lambda t, n: None,
                        children=lambda: ())
    seen = []
    for step in range(0, 2500):  # 0 to 250 s in tenths
        clock.advance(0.1 if step else 0.0)
        seen.append(card.render().removeprefix("⏳ Thinking — "))
    assert "59 s" in seen and "1 min" in seen and "1 min 5 s" in seen and "2 min" in seen
    assert all(re.fullmatch(r"\d{1,2} s|\d+ min( \d{1,2} s)?", t) for t in seen)
    assert not any(re.fullmatch(r"(6\d|\d{3,}) s|\d+ min (6\d) s", t) for t in seen)

    def seconds(text: str) -> int:
        minutes = re.match(r"(\d+) min", text)
        rest = re.search(r"(\d+) s$", text)
        return (int(minutes[1]) * 60 if minutes else 0) + (int(rest[1]) if rest else 0)

    times = [seconds(t) for t in seen]
    assert times == sorted(times)
