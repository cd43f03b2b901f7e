"""Requests the machine slept through, given up once no answer can come on them any more.

A laptop or VM suspended while a request waits for the model: when it wakes, the request's
connection is usually dead (the server, a NAT, a network changed meanwhile dropped it), and nothing
tells the client, which waits out the rest of its timeout, counted on a monotonic clock that stood
still in the suspend, and then fails the turn with a timeout that is not asked again (see
`agent.models.openai._AskOnceClient`).

The machine was suspended for as long as the wall clock ran ahead of the monotonic clock, which
stops in a suspend (Linux, macOS); a wall clock stepped forward as far (NTP) is taken for one too.
"""

from __future__ import annotations

import asyncio

from agent._clock import Clock

SERVER_GIVES_UP = 15.5 * 60
"""Seconds a server goes on sending an answer that nobody acknowledges before it drops the
connection: Linux's 924.6 s (``net.ipv4.tcp_retries2 = 15``); proxies and NATs give up sooner."""

TICK = 5.0
"""Seconds between two looks for a suspend: how long after waking a request is given up at most."""


def lost_after(timeout: float) -> float:
    """Seconds of suspend after which a request with this ``timeout`` can get no answer any more.

    The answer is made within the timeout (the client would give up on it otherwise, and a server
    does not write for ever either), and then sent for `SERVER_GIVES_UP` at most: after a longer
    suspend it came and was lost, or never will. The server is not working on it any more either,
    so the request asked again is not paid twice (one whose answer was lost is paid again: it is
    lost either way)."""
    return timeout + SERVER_GIVES_UP


async def expire_after_suspend(cutoff: asyncio.Timeout, clock: Clock, suspended: float) -> None:
    """Expire ``cutoff`` at once when the machine has been suspended ``suspended`` seconds in all
    since this began (looking every `TICK` seconds of ``clock``); runs until then or until cancelled."""
    ahead = clock.time() - clock.monotonic()
    while clock.time() - clock.monotonic() - ahead < suspended:
        await clock.sleep(TICK)
    cutoff.reschedule(asyncio.get_running_loop().time())
