"""`gateway.stop_signals.StopSignals`: what a SIGINT does once the stop has begun."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from gateway.stop_signals import StopSignals


def test_released_a_sigint_is_a_keyboardinterrupt_out_of_the_loop_between_callbacks():
    """A second SIGINT ends the command at once, raised by the loop between two callbacks: Python's own handler
    raised it wherever the main thread was, and a burst of them cut the stop short in a finalizer or the loop's
    close, with a traceback."""
    stops: list[str] = []

    async def released() -> None:
        signals = StopSignals(asyncio.get_running_loop(), lambda: stops.append("stop"))
        signals.release()
        signals.close()

    with asyncio.Runner() as runner:
        runner.run(released())
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        os.kill(os.getpid(), signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            runner.run(asyncio.sleep(5))
    assert stops == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
