"""The synchronous facade plugins get as ``ctx.subagent_lifecycle``.

Plugin tools written as plain functions run in worker threads; each call here is
handed to the event loop and waited for, carrying the caller's context so the
active parent turn travels with it. Called on the loop's own thread it would
deadlock, so it raises instead; a thread running an event loop of its own is
served as any other (the asyncio twin refuses it: its futures are the service loop's).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
from collections.abc import Coroutine
from typing import Any, TypeVar

from lifecycle._contract import (
    SubagentCancelResult,
    SubagentHandle,
    SubagentLaunchRequest,
    SubagentLifecycleError,
    SubagentReconnectResult,
    SubagentResult,
    SubagentStatus,
    SubagentTerminalState,
)
from lifecycle._service import CANCEL_REASON, AsyncSubagentLifecycle
from lifecycle._supervisor import CLOSED, NOT_STARTED

T = TypeVar("T")

CLOSED_CHECK_SECONDS = 0.25
"""How often a call waiting for its answer looks whether the service's event loop has closed meanwhile."""

ON_LOOP_THREAD = (
    "The synchronous subagent lifecycle API was called on the event-loop thread, where it would deadlock; "
    "use the asyncio twin (ctx.subagent_lifecycle.aio) from async code."
)


class SubagentLifecycle:
    """Blocking twin of `AsyncSubagentLifecycle`, safe from worker threads."""

    def __init__(self, service: AsyncSubagentLifecycle) -> None:
        self._service = service

    @property
    def aio(self) -> AsyncSubagentLifecycle:
        """The asyncio twin: the same operations as awaitables."""
        return self._service

    def launch(self, request: SubagentLaunchRequest) -> SubagentHandle:
        return self._call(self._service.launch(request))

    def status(self, handle: Any) -> SubagentStatus:
        return self._call(self._service.status(handle))

    def wait(self, handle: Any, timeout_seconds: float | None = None) -> SubagentTerminalState:
        return self._call(self._service.wait(handle, timeout_seconds))

    def cancel(self, handle: Any, reason: str | None = CANCEL_REASON) -> SubagentCancelResult:
        return self._call(self._service.cancel(handle, reason))

    def steer(self, handle: Any, text: str) -> bool:
        return self._call(self._service.steer(handle, text))

    def result(self, handle: Any) -> SubagentResult:
        return self._call(self._service.result(handle))

    def reconnect(self, handle: Any) -> SubagentReconnectResult:
        return self._call(self._service.reconnect(handle))

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        loop = self._service.loop
        running = asyncio._get_running_loop()
        # Only the service's loop (or, before it has one, any: it may be the one) would deadlock waiting here;
        # a worker thread running an event loop of its own (a tool's `asyncio.run`) is served as any thread.
        if running is not None and (loop is None or running is loop):
            coro.close()
            raise SubagentLifecycleError(ON_LOOP_THREAD, code="ON_LOOP_THREAD")
        if loop is None:
            return _before_start(coro)
        if loop.is_closed():  # it ran, and its process has stopped: nothing will answer any more
            coro.close()
            raise SubagentLifecycleError(CLOSED, code="CLOSED")
        outcome: concurrent.futures.Future[T] = concurrent.futures.Future()

        def start() -> None:
            # Runs inside the caller's copied context: the task inherits its active turn.
            task = asyncio.ensure_future(coro)
            task.add_done_callback(lambda t: _settle(t, outcome))

        try:
            loop.call_soon_threadsafe(start, context=contextvars.copy_context())
        except RuntimeError:  # closed since the check above
            coro.close()
            raise SubagentLifecycleError(CLOSED, code="CLOSED") from None
        return _answer(outcome, loop, coro)


def _before_start(coro: Coroutine[Any, Any, T]) -> T:
    """The answer of a service not started yet (nor closed), which has no loop to hand the call to: the
    asyncio twin's own, run here to its end. Before `start` it holds no key to verify a handle with, nor
    a journal to read, so it answers without waiting: reads as for an unknown handle (``UNKNOWN``), a
    launch refused (``NOT_STARTED``, or ``NO_PARENT`` outside a turn), as the twin does. Raising
    ``NOT_STARTED`` for the reads instead would make a plugin that polls handles it kept fail where its
    async twin is told they are unknown. A call that would wait is refused as not started."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise SubagentLifecycleError(NOT_STARTED, code="NOT_STARTED")


def _answer(
    outcome: concurrent.futures.Future[T], loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]
) -> T:
    """The call's answer, once the loop has given it. A loop that closes first never will: the call was handed
    to it after its last step, or its task never stepped, and the thread would wait for ever (a non-daemon one
    holding up the process's exit). Its shutdown cancels the calls still under way."""
    while True:
        try:
            return outcome.result(timeout=CLOSED_CHECK_SECONDS)
        except concurrent.futures.CancelledError:
            raise SubagentLifecycleError(CLOSED, code="CLOSED") from None
        except TimeoutError as error:
            if outcome.done() and not outcome.cancelled() and outcome.exception() is error:
                raise  # the call's own
            if loop.is_closed() and not outcome.done():
                if inspect.getcoroutinestate(coro) == inspect.CORO_CREATED:  # never run: nothing of it to unwind
                    coro.close()
                raise SubagentLifecycleError(CLOSED, code="CLOSED") from None


def _settle(task: asyncio.Task, outcome: concurrent.futures.Future) -> None:
    if task.cancelled():
        outcome.cancel()
    elif task.exception() is not None:
        outcome.set_exception(task.exception())
    else:
        outcome.set_result(task.result())
