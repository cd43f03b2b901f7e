"""Delegation backends: how a task's ``route`` becomes the model, persona and tools a child runs with.

A backend is offered by a plugin (``ctx.register_delegation_backend``) under a
name, and picked per session: ``delegation.backend`` for new sessions, a chat's
``/delegation`` after that. It has options, each a name and a description:
that is all the parent model ever sees of it (a ``route`` argument per task in
delegate_task's schema). `Routing.resolve` turns an option into a `ChildRoute`
when a task is launched; providers, models and credentials stay inside the
backend. The built-in ``default`` backend has no options: every child runs on
the default child model.

Failures are explicit: a session whose backend is gone cannot delegate at all
(`BackendUnavailable`, nothing starts), and a task whose route does not resolve
is refused (`RouteRefused`) while the rest of its batch runs. A backend that
fails (raises, or returns something other than options or a `ChildRoute`) is
logged, offers no routes, and refuses the tasks routed to it.
"""

from __future__ import annotations

import dataclasses
import logging
import reprlib
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agent import Model

log = logging.getLogger("lifecycle.routing")

DEFAULT_BACKEND = "default"
DEFAULT_DESCRIPTION = "every subagent runs on the default child model"
ECHO_CHARS = 60
"""A model-written value (a route, a role, an argument's name) is named back in a tool error cut to
this (`clipped`): whole, a route of 100,000 characters came back three times in the tool result,
which the model reads again in every later request of the turn."""
ECHO_NAMES = 10
"""Names (unknown arguments) listed back at most; the others are counted (`listed_names`)."""


def clipped(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` as it is when it has at most ``limit`` characters, else its start cut with "…" to ``limit``."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


_REPR = reprlib.Repr()  # keyword arguments only from Python 3.12
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, ECHO_CHARS, ECHO_CHARS


def echoed(value: Any) -> str:
    """A model-written value named back in a tool error: a string quoted after it is `clipped` (so it
    still reads as one), anything else as Python shows it, cut too (`reprlib` bounds the work)."""
    if isinstance(value, str):
        return repr(clipped(value))
    return clipped(_REPR.repr(value))


def listed_names(names: Sequence[str]) -> str:
    """``names`` for a tool error, comma-separated: each `clipped`, at most `ECHO_NAMES` of them."""
    shown = ", ".join(clipped(str(name)) for name in names[:ECHO_NAMES])
    return shown + (f" and {len(names) - ECHO_NAMES} more" if len(names) > ECHO_NAMES else "")


@dataclass(frozen=True, slots=True)
class RouteOption:
    """One choice a backend offers, exactly as the parent model reads it."""

    name: str
    """What the model passes as a task's ``route``."""
    description: str
    """What the option is for; never a provider, model name or key."""


@dataclass(frozen=True, slots=True)
class ChildRoute:
    """What a task's route resolved to: lives in memory only (it holds a model object), and
    nothing of it but ``route`` reaches the parent model."""

    route: str
    """The option's name."""
    model: Model | None = None
    """The model the child runs on; None for the default child model."""
    system_prompt: str | None = None
    """A persona: the first part of the child's system prompt."""
    context: str = ""
    """Text (skills, context files) added to the child's system prompt."""
    toolsets: tuple[str, ...] | None = None
    """Narrows the child's toolsets (never broadens them); None leaves them as they are."""


class RouteRefused(Exception):
    """A route that cannot be used. The message is the reason the model is shown: it must name
    no provider, model or key."""


class BackendUnavailable(Exception):
    """The session's delegation backend is not registered (any more), or failed to list its options."""


class DelegationBackend(Protocol):
    """What a plugin registers. ``options`` and ``resolve`` are called on the event loop and
    must not block; `Routing.close` awaits an ``aclose()`` the backend may have."""

    name: str
    """Lower-case word, e.g. ``model_map``: what ``delegation.backend`` and ``/delegation`` name."""
    description: str
    """One line for ``/delegation``."""

    def options(self) -> Sequence[RouteOption]: ...

    def resolve(self, route: str) -> ChildRoute:
        """The route for a task; raises `RouteRefused` with a reason the model may read."""


class Routing:
    """The delegation backends a process knows, by name; ``default`` is always there.

    ``backends`` is the registry plugins register into (shared with `agent.PluginHost`)."""

    def __init__(self, backends: MutableMapping[str, Any] | None = None) -> None:
        self.backends: MutableMapping[str, Any] = {} if backends is None else backends
        self._retired: list[Any] = []

    def register(self, backend: DelegationBackend) -> None:
        if backend.name == DEFAULT_BACKEND or backend.name in self.backends:
            raise ValueError(f"delegation backend {backend.name!r} is already registered")
        self.backends[backend.name] = backend

    def unregister(self, name: str) -> None:
        """Forget a backend: sessions that use it can no longer delegate until they switch.
        Its children keep running; it is closed with the others by `close`."""
        backend = self.backends.pop(name, None)
        if backend is not None:
            self._retired.append(backend)

    def names(self) -> list[str]:
        """``default`` first, then the registered backends in registration order."""
        return [DEFAULT_BACKEND, *self.backends]

    def available(self, name: str) -> bool:
        return name == DEFAULT_BACKEND or name in self.backends

    def description(self, name: str) -> str:
        if name == DEFAULT_BACKEND:
            return DEFAULT_DESCRIPTION
        return str(getattr(self._backend(name), "description", "") or name)

    def options(self, name: str) -> tuple[RouteOption, ...]:
        """The backend's options. Raises `BackendUnavailable` when it is not registered, or when it
        failed to list them (raised, or returned something that is not options: logged)."""
        if name == DEFAULT_BACKEND:
            return ()
        return self._listed(name, self._backend(name))

    def resolve(self, backend: str, route: str, known_toolsets: frozenset[str] | None = None) -> ChildRoute:
        """Resolve one task's route. Raises `BackendUnavailable` when the backend is not registered,
        or `RouteRefused` with the reason (an unknown option, toolsets nobody registered, a backend
        that failed to list its options or to resolve the route)."""
        if backend == DEFAULT_BACKEND:
            raise RouteRefused("this chat's delegation backend (default) has no routes; leave `route` out")
        impl = self._backend(backend)
        try:
            names = [o.name for o in self._listed(backend, impl)]
        except BackendUnavailable as exc:  # registered but failing: this task is refused, the rest run
            raise RouteRefused(str(exc)) from None
        if route not in names:
            raise RouteRefused(f"no route {echoed(route)}; the routes are: {', '.join(names) or 'none'}")
        try:
            resolved = impl.resolve(route)
        except RouteRefused:
            raise
        except Exception as exc:  # a backend's bug must refuse one task, not fail the batch
            log.exception("delegation backend %s failed to resolve route %s", backend, route)
            raise RouteRefused(f"route {route!r} could not be set up ({type(exc).__name__})") from None
        resolved = _checked(backend, route, resolved)
        unknown = sorted(set(resolved.toolsets or ()) - known_toolsets) if known_toolsets is not None else []
        if unknown:
            raise RouteRefused(f"route {route!r} names toolsets nobody provides: {', '.join(unknown)}")
        return resolved

    async def close(self) -> None:
        """Let every backend, registered or retired, release what it holds (model clients)."""
        backends, self._retired = [*self.backends.values(), *self._retired], []
        for backend in backends:
            aclose = getattr(backend, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except Exception:
                    log.exception("closing delegation backend %s failed", backend.name)

    @staticmethod
    def _listed(name: str, impl: DelegationBackend) -> tuple[RouteOption, ...]:
        try:
            listed = tuple(RouteOption(o.name, o.description) for o in impl.options())
            if not all(isinstance(o.name, str) and isinstance(o.description, str) for o in listed):
                raise TypeError("an option's name or description is not a string")
        except Exception as exc:  # a backend's bug: what it lists reaches the schema, so nothing half-right passes
            log.exception("delegation backend %s failed to list its options", name)
            raise BackendUnavailable(
                f"the delegation backend {name!r} failed to list its options ({type(exc).__name__})"
            ) from None
        return listed

    def _backend(self, name: str) -> DelegationBackend:
        backend = self.backends.get(name)
        if backend is None:
            raise BackendUnavailable(
                f"the delegation backend {name!r} is not available (its plugin is not loaded)"
            )
        return backend


def _checked(backend: str, route: str, resolved: Any) -> ChildRoute:
    """``resolved`` if it is a `ChildRoute` whose toolsets are None or names (as a tuple); else the
    task is refused, as for a backend that raised."""
    if not isinstance(resolved, ChildRoute):
        problem = f"the backend returned {type(resolved).__name__}"
    elif resolved.toolsets is None:
        return resolved
    elif isinstance(resolved.toolsets, tuple | list) and all(isinstance(t, str) for t in resolved.toolsets):
        return dataclasses.replace(resolved, toolsets=tuple(resolved.toolsets))
    else:  # a bare string would otherwise be read as toolsets named by its letters
        problem = f"its toolsets are a {type(resolved.toolsets).__name__}, not a list of names"
    log.error("delegation backend %s resolved route %s wrongly: %s", backend, route, problem)
    raise RouteRefused(f"route {route!r} could not be set up ({problem})")


def refusal_entry(task_index: int, route: Any, reason: str) -> dict[str, Any]:
    """A delegate_task result entry for a task refused before any child started."""
    return {
        "task_index": task_index, "subagent_id": None, "role": None, "status": "error", "summary": None,
        "error": f"route refused: {reason}", "exit_reason": "error", "truncated": False, "api_calls": 0,
        "duration_seconds": 0.0, "model": None, "tokens": {"input": 0, "output": 0}, "cost_usd": None,
        "tool_trace": [], "route": {"name": clipped(route) if isinstance(route, str) else route, "refused": True,
                                    "reason": reason},
        "timeout_seconds": None, "timed_out_after_seconds": None, "last_event_age": None, "timeout_phase": None,
    }


def with_route(item: dict[str, Any], route: str | None) -> dict[str, Any]:
    """A routed child's entry names its route, never the model behind it."""
    if route is not None:
        item["route"] = {"name": route}
        item["model"] = None
    return item
