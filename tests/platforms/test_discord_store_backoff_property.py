"""`discord_opened.Answers`: a store that failed is not asked for `STORE_RETRY_SECONDS` after its last failure, by any
thread, and never longer: whatever the clock does (stepped back, or forward), a thread not asked of yet is asked at
its first message once that time passed, or at once after a step back. Real discord.py channel types."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.discord_opened import STORE_RETRY_SECONDS, Answers
from platforms.discord_urls import discord

steps = st.lists(st.tuples(st.floats(-30, 30, allow_nan=False), st.booleans(), st.integers(1, 4)),
                 min_size=1, max_size=30)


@settings(max_examples=300, deadline=None)
@given(steps)
def test_a_failed_store_is_asked_again_within_its_back_off_and_never_later(events):
    now = [1_000_000.0]
    answers = Answers(lambda: now[0])
    state = {"ok": True}
    asked: list[str] = []

    def lookup(thread: str) -> bool:
        asked.append(thread)
        if not state["ok"]:
            raise OSError("disk I/O error")
        return False

    answers.bind(lookup)
    failed_at: float | None = None
    for n, (step, ok, thread) in enumerate(events):
        now[0] += step
        state["ok"] = ok
        channel = discord.PartialMessageable(state=None, id=thread + 100 * n)  # a thread not asked of yet
        message = SimpleNamespace(channel=channel, author=SimpleNamespace(bot=False), id=n)
        before = len(asked)
        answers.heard(message)
        due = failed_at is None or not 0 <= now[0] - failed_at < STORE_RETRY_SECONDS
        assert (len(asked) > before) == due
        if due:
            failed_at = None if ok else now[0]
