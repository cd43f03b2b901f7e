"""A cause counted for its ten minutes (`RepeatedWarnings`) is told as the gateway stops within them, to the log
before it closes and to the console: its timer went with the loop, and the count with it, so an operator who
stopped the gateway never learned how many more there were."""

from __future__ import annotations

import asyncio
import io
import logging

from gateway.logging import logging_installed
from gateway.testing import RecordingAdapter, make_config, start_gateway
from platforms.repeated_warnings import RepeatedWarnings, tell_counted

log = logging.getLogger("platforms.test_counts_stop")


class _FakeTimeLoop(asyncio.SelectorEventLoop):
    """A loop whose clock the test moves: its timers fire once the test has moved it past them."""

    now = 1000.0

    def time(self) -> float:
        return self.now


def _lines(stream: io.StringIO, word: str) -> list[str]:
    return [line.split(": ", 1)[1] for line in stream.getvalue().splitlines() if word in line]


async def test_a_stop_within_the_window_tells_the_counts_to_the_log_and_the_console(tmp_path) -> None:
    now = [0.0]
    stream = io.StringIO()
    with logging_installed("INFO", "text", stream) as handler:
        gateway = await start_gateway(make_config(tmp_path), [RecordingAdapter()], script={"parent": []})
        try:
            warnings = RepeatedWarnings(log, clock=lambda: now[0])  # as an adapter's, on the gateway's loop
            for second in range(0, 50, 10):
                now[0] = float(second)
                warnings.warning("701", "typing in 701 refused at %d s", second)
            warnings.warning("702", "typing in 702 refused")  # alone in its window: nothing more to tell
            now[0] = 120.0  # two minutes on, well within the ten
        finally:
            await gateway.stop(grace=0)
        told = _lines(stream, "typing in")
        assert told == ["typing in 701 refused at 0 s", "typing in 702 refused",
                        "typing in 701 refused at 40 s (and 3 more like it in the last 120 s)"]
        assert handler in logging.getLogger().handlers  # told before the log closed
    assert [e["message"] for e in gateway.recent_errors.entries() if "typing in 701" in e["message"]] == [
        "typing in 701 refused at 40 s (and 3 more like it in the last 120 s)", "typing in 701 refused at 0 s"]


def test_a_count_told_at_the_stop_is_not_told_again_nor_another_loops() -> None:
    stream = io.StringIO()
    elsewhere = RepeatedWarnings(log)

    async def counted_elsewhere() -> None:
        for _ in range(3):
            elsewhere.warning("other loop", "a count of another loop")

    other = asyncio.new_event_loop()
    loop = _FakeTimeLoop()
    warnings = RepeatedWarnings(log, clock=loop.time)

    async def stopping() -> None:
        for _ in range(3):
            warnings.warning("cause", "platform down")
            loop.now += 1
        tell_counted()
        loop.now += 600  # past the window: its timer, cancelled, tells nothing more
        for _ in range(20):
            await asyncio.sleep(0)

    try:
        with logging_installed("INFO", "text", stream):
            other.run_until_complete(counted_elsewhere())
            loop.run_until_complete(stopping())
            assert _lines(stream, "platform down") == ["platform down",
                                                       "platform down (and 1 more like it in the last 3 s)"]
            assert _lines(stream, "another loop") == ["a count of another loop"]  # its own loop's stop tells it
    finally:
        loop.close()
        other.close()


def test_a_loop_closed_with_a_count_untold_is_not_kept_alive_by_it() -> None:
    # Its counts' timers went with it; the loop, and the warnings that counted on it, must go with their owners
    # (a test's loop, a stop that never came to `tell_counted`), not stay in the registry of counts to tell.
    import gc
    import weakref

    def counted_then_closed() -> tuple[weakref.ref, weakref.ref]:
        loop = asyncio.new_event_loop()
        warnings = RepeatedWarnings(log)

        async def counted() -> None:
            for _ in range(3):
                warnings.warning("cause", "platform down")

        try:
            with logging_installed("INFO", "text", io.StringIO()):
                loop.run_until_complete(counted())
        finally:
            loop.close()
        return weakref.ref(loop), weakref.ref(warnings)

    loop, warnings = counted_then_closed()
    gc.collect()
    assert (loop(), warnings()) == (None, None)
