"""`platforms.local_interrupts.Interrupts`: what a SIGINT does to the terminal chat, with the clock injected."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from platforms.local_interrupts import AGAIN_WITHIN, Interrupts


class _Chat:
    """What the handler acts on: a turn running or not, and a record of its stops and its leaving."""

    def __init__(self, *, busy: bool, interactive: bool = True, stop_fails: bool = False) -> None:
        self.busy = busy
        self.now = 100.0
        self.done: list[str] = []
        self.changed = asyncio.Event()
        self._stop_fails = stop_fails
        self.interrupts = Interrupts(busy=lambda: self.busy, interactive=interactive, stop_turn=self._stop_turn,
                                     leave=self._leave, clock=lambda: self.now)

    async def _stop_turn(self) -> None:
        self.done.append("stop")
        self.changed.set()
        if self._stop_fails:
            raise OSError("database or disk is full")

    def _leave(self) -> None:
        self.done.append("leave")
        self.changed.set()

    async def sigint(self, then: list[str]) -> None:
        """One SIGINT, and wait until what it did is ``then``."""
        self.done.clear()
        self.interrupts.received()
        async with asyncio.timeout(5):
            while self.done != then:
                self.changed.clear()
                await self.changed.wait()
        await asyncio.sleep(0)  # nothing more follows
        assert self.done == then


async def test_a_turn_is_stopped_and_a_second_sigint_soon_after_leaves():
    chat = _Chat(busy=True)
    await chat.sigint(["stop"])
    chat.now += AGAIN_WITHIN / 2
    await chat.sigint(["leave"])  # the turn still runs: its stop was asked already


async def test_a_sigint_long_after_the_last_stops_the_turn_again():
    chat = _Chat(busy=True)
    await chat.sigint(["stop"])
    chat.now += AGAIN_WITHIN
    await chat.sigint(["stop"])


async def test_a_sigint_for_the_turn_of_a_message_sent_since_stops_it():
    """Stopped, then a message typed and sent at once: its turn is stopped too, not taken for the one before."""
    chat = _Chat(busy=True)
    await chat.sigint(["stop"])
    chat.interrupts.new_turn()
    chat.now += 0.5
    await chat.sigint(["stop"])


async def test_with_nothing_running_a_sigint_leaves():
    await _Chat(busy=False).sigint(["leave"])


async def test_from_a_pipe_a_sigint_stops_the_turn_then_leaves():
    await _Chat(busy=True, interactive=False).sigint(["stop", "leave"])


async def test_a_stop_that_fails_still_leaves_when_leaving(caplog):
    await _Chat(busy=True, interactive=False, stop_fails=True).sigint(["stop", "leave"])
    assert "could not stop the running turn" in caplog.text


def test_the_loops_sigint_is_the_chats_until_left_then_a_keyboardinterrupt_between_callbacks():
    """Given back by the leaving itself: one more SIGINT ends the command at once (KeyboardInterrupt), raised out of
    the loop between two callbacks. Python's own handler raised it wherever the main thread was: a burst of them cut
    the gateway's stop short in a finalizer or the loop's close, and printed a traceback."""
    async def left() -> _Chat:
        chat = _Chat(busy=False)
        chat.interrupts.take()
        os.kill(os.getpid(), signal.SIGINT)
        async with asyncio.timeout(5):
            await chat.changed.wait()
        return chat

    with asyncio.Runner() as runner:
        chat = runner.run(left())
        assert chat.done == ["leave"]
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        os.kill(os.getpid(), signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            runner.run(asyncio.sleep(5))
        chat.interrupts.give_back()  # idempotent: still the loop's until it closes
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
