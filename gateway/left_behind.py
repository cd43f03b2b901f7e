"""Cancelling work at a stop without waiting for ever on code that ignores its cancellation.

A plugin's async tool, hook or command that catches `asyncio.CancelledError` and carries on (a
retry loop around ``except Exception`` in older code, a ``finally`` that awaits a dead service)
never ends when its turn is cancelled. Waiting for it would hold the stop until a supervisor
killed the process, past the grace its docs promise. Such work is waited for a bounded time,
named in the log, and left behind: what it had not finished is handled again by the next start,
exactly as after a process killed mid-turn (its event was never settled).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Collection

log = logging.getLogger("gateway.stop")

STUCK_WAIT_SECONDS = 1.0
"""How long cancelled work gets to end at a stop, past the grace: code that honours its cancellation
ends within a few loop iterations, so only code that ignores it waits this long."""


async def cancel_within(tasks: Collection[asyncio.Future], seconds: float) -> list[asyncio.Future]:
    """Cancel ``tasks`` and wait up to ``seconds`` for them to end; return those that did not.
    The exceptions of those that ended are taken, so none is reported as never retrieved."""
    for task in tasks:
        task.cancel()
    if not tasks:
        return []
    done, pending = await asyncio.wait(tasks, timeout=seconds)
    for task in done:
        if not task.cancelled():
            task.exception()
    return [task for task in tasks if task in pending]


async def end_the_rest(seconds: float = STUCK_WAIT_SECONDS) -> list[asyncio.Task]:
    """At the very end of a command: cancel every other task of the loop, as `asyncio.run` does on
    return, but wait at most ``seconds``; return those still running, each named in the log. A caller
    that gets any back must end the process without the event loop's own clean-up, which would wait
    for them for ever."""
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    stuck = await cancel_within(tasks, seconds)
    for task in stuck:
        log.error("%s did not end within %.0f s of its cancellation (it ignores cancellation): "
                  "the process ends without it", describe(task), seconds)
    return stuck


_ASYNCIO = os.path.dirname(asyncio.__file__)


def describe(task: asyncio.Future) -> str:
    """The task's name and the innermost function it waits in, outside asyncio: the code to look at.
    (`asyncio.Task.get_stack` gives the task's outermost coroutine alone.)"""
    if not isinstance(task, asyncio.Task):
        return repr(task)
    frame, coro = None, task.get_coro()
    while coro is not None:
        inner = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if inner is None:
            break
        if not inner.f_code.co_filename.startswith(_ASYNCIO):
            frame = inner
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    where = f" in {frame.f_code.co_qualname} ({frame.f_code.co_filename}:{frame.f_lineno})" if frame else ""
    return f"task {task.get_name()}{where}"
