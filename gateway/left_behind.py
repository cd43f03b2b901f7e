"""Cancelling work at a stop without waiting for ever on code that ignores its cancellation.

A plugin's async tool, hook or command that catches `asyncio.CancelledError` and carries on (a
retry loop around ``except Exception`` in older code, a ``finally`` that awaits a dead service)
never ends when its turn is cancelled. Waiting for it would hold the stop until a supervisor
killed the process, past the grace its docs promise. Such work is waited for a bounded time,
named in the log, and left behind: what it had not finished is handled again by the next start,
exactly as after a process killed mid-turn (its event was never settled).

The stop's last line says, in counts, what it leaves for the next start (`left_for_next_start`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Collection
from typing import TYPE_CHECKING

from gateway.unconfigured import configured

if TYPE_CHECKING:
    from gateway.store import GatewayStore
    from lifecycle import HostView

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


def left_for_next_start(store: GatewayStore, platforms: Collection[str], children: HostView, *,
                        children_survive: bool, resume: bool) -> str:
    """The stop's last line, counts only (no chat's words): the messages still to send, the messages still to
    answer (those whose turns the stop cut short apart), the children still live, which the engine's close is
    about to interrupt unless they survive it (``children_survive``), those of background delegations apart (the
    next start reports them to their chats, or resumes them: ``resume``), and the background results finished
    but not delivered. Read once the store's last commit is done and before the children's engine closes. Only
    what a start configuring ``platforms`` takes up; a platform no longer configured is kept, and the next start
    says so itself (`gateway.unconfigured`). Raises what the store raises."""
    unsent = sum(n for platform, n in store.outbox.pending_by_platform().items() if platform in platforms)
    waiting = sum(n for platform, n in store.inbox.waiting_by_platform().items() if platform in platforms)
    cut_short = sum(1 for platform, _ in store.inbox.begun() if platform in platforms)
    delegations = [row for row in store.delegations.running() if configured(row, platforms)]
    live = {child.subagent_id for session_id in children.sessions_with_children()
            for child in children.children(session_id)}
    of_delegations = live.intersection(task.subagent_id for row in delegations for task in row.tasks)
    undelivered = sum(1 for row in delegations if not live.intersection(task.subagent_id for task in row.tasks))
    parts = [
        _count(unsent, "outgoing message not yet sent", "outgoing messages not yet sent", "(sent at the next start)"),
        _count(cut_short, "message of a turn cut short", "messages of turns cut short", "(answered at the next start)"),
        _count(waiting - cut_short, "message waiting for its turn", "messages waiting for their turns",
               "(answered at the next start)"),
    ]
    if children_survive:
        parts.append(_count(len(live), "subagent left running on the workers", "subagents left running on the workers"))
    else:
        parts += [_count(len(of_delegations), "subagent of a background delegation interrupted",
                         "subagents of background delegations interrupted",
                         "(resumed at the next start)" if resume else "(reported to their chats at the next start)"),
                  _count(len(live) - len(of_delegations), "other subagent interrupted", "other subagents interrupted")]
    parts.append(_count(undelivered, "background result not yet delivered", "background results not yet delivered",
                        "(delivered at the next start)"))
    said = [part for part in parts if part]
    return f"stopped: {', '.join(said) if said else 'nothing left'}"


def _count(n: int, one: str, many: str, then: str = "") -> str:
    if n <= 0:
        return ""
    return " ".join(filter(None, (str(n), one if n == 1 else many, then)))
