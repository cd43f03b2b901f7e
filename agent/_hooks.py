"""Named hooks run in registration order; a failing or hanging hook is logged and the rest still run."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("agent.hooks")

#: Hook names with a meaning; plugins may not invent others, so a typo is an error, not silence.
HOOK_NAMES = frozenset({
    "subagent_start", "subagent_stop", "turn_start", "turn_end", "model_call", "tool_start", "tool_end",
})


DEFAULT_TIMEOUT_SECONDS = 10.0


class HookRegistry:
    """Hooks observe; they never gate. So one that hangs (a dead network call in a plugin) is
    given up on after ``timeout_seconds``: otherwise the turn, or the child whose end it
    observes, would never finish, and neither would the gateway's shutdown."""

    def __init__(self, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.timeout_seconds = timeout_seconds
        self._hooks: dict[str, list[tuple[Callable[..., Any], str | None]]] = {}

    def register(self, name: str, fn: Callable[..., Any], *, owner: str | None = None) -> None:
        """``owner`` (a plugin's module) is named when the hook fails: a lambda's name alone
        does not say whose it is."""
        if name not in HOOK_NAMES:
            raise ValueError(f"unknown hook {name!r}; known hooks: {', '.join(sorted(HOOK_NAMES))}")
        self._hooks.setdefault(name, []).append((fn, owner))

    def has(self, name: str) -> bool:
        return bool(self._hooks.get(name))

    async def run(self, name: str, **kwargs: Any) -> None:
        """Call every hook for ``name`` with keyword arguments; sync hooks run in a worker thread
        (one that overruns is left to finish there: a thread cannot be stopped)."""
        for fn, owner in self._hooks.get(name, ()):
            limit = asyncio.timeout(self.timeout_seconds)
            try:
                async with limit:
                    if inspect.iscoroutinefunction(fn):
                        await fn(**kwargs)
                    else:
                        await asyncio.to_thread(fn, **kwargs)
            except asyncio.CancelledError:
                raise
            except TimeoutError:
                if limit.expired():
                    log.error("hook %s (%s) did not finish in %g s; went on without it",
                              name, _describe(fn, owner), self.timeout_seconds)
                else:  # the hook's own
                    log.exception("hook %s (%s) failed", name, _describe(fn, owner))
            except Exception:
                log.exception("hook %s (%s) failed", name, _describe(fn, owner))


def _describe(fn: Callable[..., Any], owner: str | None) -> str:
    return f"{'plugin ' + owner + ': ' if owner else ''}{getattr(fn, '__qualname__', fn)}"
