"""Named hooks run in registration order; a failing or hanging hook is logged and the rest still run."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

from agent._plugin_threads import PluginThreads
from agent._tools import exits_as_failures, from_signal_handler

log = logging.getLogger("agent.hooks")

#: Hook names with a meaning; plugins may not invent others, so a typo is an error, not silence.
HOOK_NAMES = frozenset({
    "subagent_start", "subagent_stop", "turn_start", "turn_end", "model_call", "tool_start", "tool_end",
})


DEFAULT_TIMEOUT_SECONDS = 10.0
_IMMUTABLE = frozenset({str, int, float, bool, type(None)})
"""Argument types a hook can share with the caller as they are (no copy needed)."""
HOOK_THREADS = 8
"""Threads for plain-function hooks (`PluginThreads`: a stopping process does not wait for them).
A hook that hangs holds one until it returns (it is skipped meanwhile), the others share the rest."""


class HookRegistry:
    """Hooks observe; they never gate. So one that hangs (a dead network call in a plugin) is
    given up on after ``timeout_seconds``: otherwise the turn, or the child whose end it
    observes, would never finish, and neither would the gateway's shutdown."""

    def __init__(self, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.timeout_seconds = timeout_seconds
        self._hooks: dict[str, list[tuple[Callable[..., Any], str | None, bool]]] = {}
        """Each name's hooks: the function, its owner, and whether it is a coroutine function (asked
        once here, not at each of the many calls: a model_call hook runs at every model call)."""
        self.registered: frozenset[str] = frozenset()
        """The names with at least one hook: hot paths test ``name in hooks.registered`` before
        building a call (a thousand children each ask five times, and most hosts have none)."""
        self._overrunning: dict[int, int] = {}
        """Hooks given up on (plain functions, and plugins' coroutine functions), with how many of their
        calls have not returned yet; by ``id``, since a hook may be unhashable (a dataclass instance
        with ``__call__``), and this registry keeps each one alive."""
        self._threads = PluginThreads(HOOK_THREADS, "hook")

    def register(self, name: str, fn: Callable[..., Any], *, owner: str | None = None) -> None:
        """``owner`` (a plugin's module) is named when the hook fails: a lambda's name alone
        does not say whose it is."""
        if name not in HOOK_NAMES:
            raise ValueError(f"unknown hook {name!r}; known hooks: {', '.join(sorted(HOOK_NAMES))}")
        self._hooks.setdefault(name, []).append((fn, owner, inspect.iscoroutinefunction(fn)))
        self.registered = self.registered | {name}

    def has(self, name: str) -> bool:
        return name in self.registered

    async def run(self, name: str, **kwargs: Any) -> None:
        """Call every hook for ``name`` with keyword arguments; sync hooks run in a worker thread.
        One that overruns is left to finish (a thread cannot be stopped, a coroutine may not give in
        to its cancellation), and until it has, the hook is skipped: a hung one holds one thread or
        task, not one more per event."""
        for fn, owner, is_coroutine in self._hooks.get(name, ()):
            if id(fn) in self._overrunning:
                log.warning("hook %s (%s) is still running from an earlier call; skipped", name, _describe(fn, owner))
                continue
            limit = asyncio.timeout(self.timeout_seconds)
            try:
                async with limit:
                    await self._call(name, fn, owner, is_coroutine, kwargs)
            except asyncio.CancelledError:
                if asyncio.current_task().cancelling():  # the caller is cancelled (a stop): not the hook's
                    raise
                # The hook's own (a task or future it awaited was cancelled by someone else): raised on, it
                # ended the turn that ran the hook, with no answer for its chat.
                log.exception("hook %s (%s) failed", name, _describe(fn, owner))
            except TimeoutError:
                if limit.expired():
                    log.error("hook %s (%s) did not finish in %g s; went on without it",
                              name, _describe(fn, owner), self.timeout_seconds)
                else:  # the hook's own
                    log.exception("hook %s (%s) failed", name, _describe(fn, owner))
            # SystemExit: a plugin's sys.exit() (one in a thread comes here as itself), which would
            # stop the gateway; a hook's failure is logged and the rest run.
            except (Exception, SystemExit) as exc:
                if isinstance(exc, SystemExit) and from_signal_handler(exc):  # `ask` stopped meanwhile: no hook's
                    raise
                log.exception("hook %s (%s) failed", name, _describe(fn, owner))

    def close(self) -> list[str]:
        """Shutdown: plain-function hooks still running are logged and left to their threads, which
        the process does not wait for (`PluginThreads`); returns what they are. Later calls of
        plain-function hooks fail (logged as any hook failure)."""
        return self._threads.close()

    async def _call(self, name: str, fn: Callable[..., Any], owner: str | None, is_coroutine: bool,
                    kwargs: dict[str, Any]) -> None:
        """``fn(**kwargs)``: a plain function in a worker thread (`PluginThreads`, in this context),
        a plugin's coroutine function in a task of its own (in a copy of this context). Once the caller
        stops waiting, such a call is cancelled if it is a task, but not waited for: a thread cannot be
        stopped, and a coroutine may not give in (one that retries whatever interrupts it). It is
        remembered until it returns. The host's own coroutine hooks (no ``owner``) are awaited here:
        they may set context variables the caller reads on (the gateway's tracing does). An awaitable
        that a plain callable returns (``lambda **e: notify(**e)``) runs as a plugin's coroutine does.
        A plugin's hook gets its own copy of each mutable argument: one that edits ``arguments`` in place
        (to log less of it) must change neither the tool call nor what the next hook reads."""
        if owner is not None:
            kwargs = {k: v if type(v) in _IMMUTABLE else copy.deepcopy(v) for k, v in kwargs.items()}
        if is_coroutine:
            if owner is None:
                await fn(**kwargs)
                return
            # In a task of its own, a SystemExit would go up out of the event loop: `exits_as_failures`.
            call: asyncio.Future[Any] = asyncio.ensure_future(exits_as_failures(fn(**kwargs)))
        else:
            run = functools.partial(contextvars.copy_context().run, fn, **kwargs)
            call = asyncio.wrap_future(self._threads.submit(f"hook {name} ({_describe(fn, owner)})", run))
        await self._wait(call, fn, owner)
        out = call.result()
        if inspect.isawaitable(out):  # a plain callable handing back a coroutine: `lambda **e: notify(**e)`
            await self._wait(asyncio.ensure_future(exits_as_failures(out)), fn, owner)

    async def _wait(self, call: asyncio.Future[Any], fn: Callable[..., Any], owner: str | None) -> None:
        try:
            await asyncio.shield(call)
        except asyncio.CancelledError:
            if isinstance(call, asyncio.Task):
                call.cancel()  # a thread's future cancelled would read as done while the thread runs on
            if not call.done():
                self._overrunning[id(fn)] = self._overrunning.get(id(fn), 0) + 1
                call.add_done_callback(functools.partial(self._returned, fn, owner))
            raise

    def _returned(self, fn: Callable[..., Any], owner: str | None, call: asyncio.Future[Any]) -> None:
        if self._overrunning[id(fn)] == 1:
            del self._overrunning[id(fn)]
        else:
            self._overrunning[id(fn)] -= 1
        if not call.cancelled() and call.exception() is not None:
            log.error("hook %s failed after it was given up on", _describe(fn, owner), exc_info=call.exception())


def _describe(fn: Callable[..., Any], owner: str | None) -> str:
    return f"{'plugin ' + owner + ': ' if owner else ''}{getattr(fn, '__qualname__', fn)}"
