"""The log's repeat filter tells what it dropped without waiting for another line of the kind, which may never come: a
burst, then silence, was one line, its repeats never counted. As its window closes (a timer on the loop that logs,
on a fake clock here), or as the log's handler is closed (a CLI command's end, where no loop runs). Lines that differ
only in whom they name (each refused stranger's) fold per platform, counting how many there were."""

from __future__ import annotations

import asyncio
import io
import logging

from gateway.log_repeats import RepeatFilter
from gateway.logging import logging_installed
from gateway.testing import RecordingAdapter, make_config, settled

log = logging.getLogger("gateway.test.told")


class _FakeTimeLoop(asyncio.SelectorEventLoop):
    """A loop whose clock the test moves: its timers fire once the test has moved it past them."""

    now = 1000.0

    def time(self) -> float:
        return self.now


def _lines(stream: io.StringIO, word: str) -> list[str]:
    return [line.split(": ", 1)[1] for line in stream.getvalue().splitlines()
            if word in line and not line.startswith(" ")]


def _repeats(handler: logging.Handler) -> RepeatFilter:
    return next(f for f in handler.filters if isinstance(f, RepeatFilter))


async def _turns(until, n: int = 50) -> None:
    for _ in range(n):
        if until():
            return
        await asyncio.sleep(0)


def _committing_failed() -> None:
    try:
        raise OSError(28, "No space left on device")
    except OSError:
        log.exception("committing failed")


def test_a_burst_then_silence_is_told_as_its_window_closes():
    loop = _FakeTimeLoop()
    stream = io.StringIO()

    async def burst() -> None:
        for _ in range(5):
            _committing_failed()
            loop.now += 1
        await _turns(lambda: False, 5)
        assert _lines(stream, "committing") == ["committing failed"]  # within the window: nothing yet
        loop.now = 1000.0 + 30
        await _turns(lambda: len(_lines(stream, "committing")) == 2)
        # Once, whatever else runs: the count is not told again, nor folded into the next line.
        await _turns(lambda: False, 5)
        loop.now += 30
        _committing_failed()

    try:
        with logging_installed("INFO", "text", stream, repeat_window=30) as handler:
            _repeats(handler)._clock = loop.time
            loop.run_until_complete(burst())
    finally:
        loop.close()
    assert _lines(stream, "committing") == ["committing failed", "committing failed (and 3 more like it in the last"
                                            " 30 s)", "committing failed"]
    # The count has its exception's line, not its kind's traceback, which was the first line's.
    assert stream.getvalue().count("Traceback") == 2
    assert stream.getvalue().count("  OSError: [Errno 28] No space left on device") == 3


def test_a_flood_that_goes_on_is_one_line_a_window():
    loop = _FakeTimeLoop()
    stream = io.StringIO()

    async def flood() -> None:
        for _ in range(3):
            for _ in range(100):
                log.warning("platform down")
                loop.now += 0.29  # 29 s of it a window
            loop.now += 1
            await _turns(lambda: False, 5)

    try:
        with logging_installed("INFO", "text", stream, repeat_window=30) as handler:
            _repeats(handler)._clock = loop.time
            loop.run_until_complete(flood())
    finally:
        loop.close()
    said = _lines(stream, "platform down")
    assert said[0] == "platform down" and len(said) <= 4, said
    assert sum(int(line.split("(and ")[1].split()[0]) + 1 for line in said[1:]) == 299, said


def test_where_no_loop_runs_the_count_is_told_as_the_log_is_closed():
    # A CLI command (`switchboard inbox dead`, `config check`) logs without a loop: its end tells the count.
    stream = io.StringIO()
    now = [0.0]
    with logging_installed("INFO", "text", stream, repeat_window=30) as handler:
        _repeats(handler)._clock = lambda: now[0]
        for _ in range(4):
            log.warning("cannot read the journal")
            now[0] += 2
        assert _lines(stream, "journal") == ["cannot read the journal"]
    assert _lines(stream, "journal") == ["cannot read the journal",
                                         "cannot read the journal (and 2 more like it in the last 8 s)"]
    log.warning("cannot read the journal")  # after the block: its handler is gone, and tells nothing more
    assert len(_lines(stream, "journal")) == 2


async def test_strangers_refused_fold_per_platform_counting_them(tmp_path, gateways):
    chat = RecordingAdapter("telegram")
    config = make_config(tmp_path, platforms={"telegram": {"enabled": False, "allowed_users": ["42"]}})
    stream = io.StringIO()
    now = [0.0]
    with logging_installed("INFO", "text", stream, repeat_window=30) as handler:
        _repeats(handler)._clock = lambda: now[0]
        gateway = await gateways(config, [chat], script={"parent": []})
        for user in range(1, 41):  # thirty strangers, ten of them writing twice
            await chat.say("hi", user=str(1000 + user % 30), chat=str(1000 + user % 30))
        await chat.wait_for(lambda: len(chat.messages) == 30)
        await settled(gateway)
        assert _lines(stream, "refused telegram") == ["refused telegram user 1001",
                                                      "refused telegram user 1001 again, without an answer"]
    assert _lines(stream, "refused telegram") == [
        "refused telegram user 1001", "refused telegram user 1001 again, without an answer",
        "refused telegram user 1000 (and 28 more like it in the last 0 s, from 30 users)",
        "refused telegram user 1010 again, without an answer (and 8 more like it in the last 0 s, from 10 users)"]


def test_a_burst_logged_by_a_worker_thread_is_told_on_the_loop():
    # A thread (the WAL checkpointer, a tool run with to_thread) has no loop of its own: the count is told on the
    # loop the gateway runs.
    loop = _FakeTimeLoop()
    stream = io.StringIO()

    async def from_a_thread() -> None:
        log.warning("checkpoint failed")  # on the loop: the filter learns which one it is
        loop.now += 1
        await asyncio.to_thread(lambda: [log.warning("checkpoint failed") for _ in range(3)])
        await _turns(lambda: False, 5)
        loop.now += 30
        await _turns(lambda: len(_lines(stream, "checkpoint")) == 2)

    try:
        with logging_installed("INFO", "text", stream, repeat_window=30) as handler:
            _repeats(handler)._clock = loop.time
            loop.run_until_complete(from_a_thread())
            assert _lines(stream, "checkpoint") == ["checkpoint failed",
                                                    "checkpoint failed (and 2 more like it in the last 31 s)"]
    finally:
        loop.close()


def test_a_count_of_a_kind_forgotten_for_newer_ones_is_told_then(monkeypatch):
    monkeypatch.setattr("gateway.log_repeats._MAX_KINDS", 2)
    told: list[str] = []
    repeats = RepeatFilter(30, clock=lambda: 0.0, emit=lambda record: told.append(record.getMessage()))
    passed = [m for m in ("a", "a", "a", "b", "c") if repeats.filter(logging.makeLogRecord({"msg": m}))]
    assert passed == ["a", "b", "c"] and told == ["a (and 1 more like it in the last 0 s)"]
    repeats.close()
    assert told == ["a (and 1 more like it in the last 0 s)"]
