"""`gateway.stop_signals.StopSignals`: what a SIGINT does once the stop has begun."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from gateway.stop_signals import StopSignals

BLOCK = 5.0
"""Seconds code blocks the loop for, well past `gateway.stop_signals.INTERRUPT_WITHIN`."""


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


def test_released_a_sigint_while_the_loop_is_blocked_is_raised_where_it_blocks():
    """Code that blocks the loop during the stop (a plugin's synchronous call) does not hold a second Ctrl-C until it
    returns: the loop cannot raise it between callbacks then, so it is raised where the main thread is, as Python's
    own handler did before the stop's SIGINT went through the loop."""

    async def released() -> None:
        StopSignals(asyncio.get_running_loop(), lambda: None).release()

    async def blocks() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(BLOCK)  # the loop gets no control back meanwhile
        await asyncio.sleep(BLOCK)  # then it does, and raises it

    with asyncio.Runner() as runner:
        runner.run(released())
        began = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            runner.run(blocks())
        assert time.monotonic() - began < BLOCK / 2  # before: once the blocking call returned
