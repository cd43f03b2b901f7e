"""Plugins: importable modules exposing ``register(ctx)``.

A plugin's registrations are staged and applied only when its ``register``
returns, so a plugin that fails half-way leaves nothing behind; the failure is
reported and the remaining plugins still load. An import, or a ``register``, that
does not return within `LOAD_TIMEOUT_SECONDS` fails its plugin the same way: a service
it waits for without a timeout must not keep the host from ever starting.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import importlib
import inspect
import logging
import os
import re
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from agent._errors import PluginError
from agent._hooks import HOOK_NAMES, HookRegistry
from agent._plugin_threads import PluginThreads
from agent._tools import RESERVED_TOOLSETS, Exited, Handler, Tool, ToolRegistry, exits_as_failures, from_signal_handler

log = logging.getLogger("agent.plugins")

BACKEND_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
"""What a delegation backend may be called (`config check` holds ``delegation.backend`` to it too)."""
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What OpenAI-compatible APIs accept as a function name."""

PLUGIN_TOOL_THREADS = 64
"""Threads for plugins' plain-function tools (`PluginThreads`: a stopping process does not wait for
them). A tool call that hangs holds one until it returns; the others share the rest."""
PLUGIN_TOOL_THREADS_PER_CHAT = 8
"""How many of them one chat's calls (its session's and its subagents') may hold: a service that hangs
in one busy chat leaves the rest to the others (a session runs its own tool calls one at a time)."""
LOAD_TIMEOUT_SECONDS = 30.0
"""Seconds one plugin's import, and then its ``register(ctx)``, may each take before that plugin
fails to load (``agent.plugin_load_timeout_seconds``)."""


@dataclass(frozen=True, slots=True)
class PluginCommand:
    name: str
    description: str
    handler: Callable[..., Any]
    """Called by the gateway as ``handler(args: str, ctx)``; may be async; returns reply text."""
    plugin: str


class PluginContext:
    """What ``register(ctx)`` receives. Registrations take effect only if it returns."""

    def __init__(self, module: str, *, lifecycle: Any = None, config: Any = None) -> None:
        self.module = module
        self.config = config
        self._lifecycle = lifecycle
        self._tools: list[Tool] = []
        self._hooks: list[tuple[str, Callable[..., Any]]] = []
        self._commands: list[PluginCommand] = []
        self._backends: list[Any] = []
        self._staging = True
        """Whether registrations are taken: only until ``register`` has returned (or failed, or was given up on)."""

    def _check_staging(self, what: str) -> None:
        # A registration kept for later (on first use, from a thread register started) was dropped without
        # a word, and the plugin author looked for a bug in the tool that was never there.
        if not self._staging:
            raise PluginError(self.module, f"{what} was not registered: registrations are taken only while "
                                           "register(ctx) runs, and it has returned")

    @property
    def subagent_lifecycle(self) -> Any:
        """The synchronous lifecycle facade (``lifecycle.SubagentLifecycle``)."""
        if self._lifecycle is None:
            raise PluginError(self.module, "the subagent lifecycle service is not available in this host")
        return self._lifecycle

    def register_tool(
        self,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        handler: Handler,
        *,
        toolset: str | None = None,
    ) -> None:
        self._check_staging(f"tool {name!r}")
        # What the model APIs refuse would fail every model call of every chat, not just this tool's.
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            raise PluginError(self.module, f"tool name {name!r} must be 1 to 64 letters, digits, '_' or '-'")
        if not isinstance(description, str):
            raise PluginError(self.module, f"tool {name!r} needs a description (a string)")
        if not callable(handler):
            raise PluginError(self.module, f"tool {name!r} has no callable handler")
        if inspect.isgeneratorfunction(handler) or inspect.isasyncgenfunction(handler):
            # Called, it only made a generator: its body never ran, and the model read "<generator object …>" as
            # the answer of a call that did nothing (an invoice it believed sent).
            raise PluginError(self.module, f"tool {name!r} has a generator as its handler (it yields): its body "
                                           "would never run; return the result instead")
        toolset = toolset or self.module.rsplit(".", 1)[-1]
        if not isinstance(toolset, str):
            raise PluginError(self.module, f"toolset name {toolset!r} must be a non-empty string")
        if any(t.name == name for t in self._tools):
            raise PluginError(self.module, f"tool {name!r} is registered twice")
        if toolset in RESERVED_TOOLSETS:
            raise PluginError(self.module, f"toolset name {toolset!r} is reserved")
        try:
            jsonschema.Draft202012Validator.check_schema(parameters)
        except jsonschema.SchemaError as exc:
            raise PluginError(self.module, f"tool {name!r} has an invalid parameter schema: {exc.message}") from None
        if not isinstance(parameters, Mapping) or parameters.get("type", "object") != "object":
            raise PluginError(self.module, f"tool {name!r} has an invalid parameter schema: it must describe an "
                                           "object ({'type': 'object', ...}), whose properties are the arguments")
        self._tools.append(Tool(name, description, parameters, handler, toolset))

    def register_hook(self, name: str, fn: Callable[..., Any]) -> None:
        self._check_staging(f"hook {name}")
        if name not in HOOK_NAMES:
            raise PluginError(self.module, f"unknown hook {name!r}; known hooks: {', '.join(sorted(HOOK_NAMES))}")
        if not callable(fn):
            raise PluginError(self.module, f"hook {name}: {fn!r} is not callable")
        self._hooks.append((name, fn))

    def register_command(self, name: str, handler: Callable[..., Any], description: str = "") -> None:
        self._check_staging(f"command /{name}")
        if not isinstance(name, str) or not (name := name.lstrip("/!").lower()).isidentifier():
            raise PluginError(self.module, f"command name {name!r} must be a single word")
        if not callable(handler):
            raise PluginError(self.module, f"command /{name} has no callable handler")
        # The platforms' command menus take it as text: Telegram's refused anything else, failing the gateway's start.
        if not isinstance(description := "" if description is None else description, str):
            raise PluginError(self.module, f"command /{name}: its description must be a string, "
                                           f"not {type(description).__name__}")
        if any(c.name == name for c in self._commands):
            raise PluginError(self.module, f"command /{name} is registered twice")
        self._commands.append(PluginCommand(name, description, handler, self.module))

    def register_delegation_backend(self, backend: Any) -> None:
        """Offer a delegation backend (a ``lifecycle.DelegationBackend``: ``name``,
        ``description``, ``options()``, ``resolve(route)``) that delegate_task can route
        tasks through; ``delegation.backend`` or a chat's ``/delegation`` picks it by name."""
        name = getattr(backend, "name", None)
        self._check_staging(f"delegation backend {name!r}")
        if not isinstance(name, str) or not BACKEND_NAME.fullmatch(name):
            raise PluginError(self.module,
                              f"delegation backend name {name!r} must be a lower-case word like 'model_map'")
        for method in ("options", "resolve"):
            if not callable(getattr(backend, method, None)):
                raise PluginError(self.module, f"delegation backend {name!r} has no {method}() method")
        if any(b.name == name for b in self._backends):
            raise PluginError(self.module, f"delegation backend {name!r} is registered twice")
        self._backends.append(backend)


@dataclass(slots=True)
class PluginHost:
    """Where applied registrations land; the host reads these registries."""

    tools: ToolRegistry
    hooks: HookRegistry
    commands: dict[str, PluginCommand] = field(default_factory=dict)
    delegation_backends: dict[str, Any] = field(default_factory=dict)
    """Delegation backends by name (``lifecycle.Routing`` reads them)."""
    loaded: list[str] = field(default_factory=list)
    failures: list[PluginError] = field(default_factory=list)
    reserved_commands: frozenset[str] = frozenset()
    """Command names the host answers itself: its own handler runs first, so a plugin
    command of that name could never run."""
    tool_threads: PluginThreads = field(default_factory=lambda: PluginThreads(
        PLUGIN_TOOL_THREADS, "plugin-tool", per_key=PLUGIN_TOOL_THREADS_PER_CHAT))
    """Where the plugins' plain-function tools run."""
    load_timeout_seconds: float = LOAD_TIMEOUT_SECONDS

    def close(self) -> list[str]:
        """Shutdown: plugin tool calls still running in their threads are logged and left to them,
        which the process does not wait for; returns what they are. Later calls of plain-function
        plugin tools fail (the model reads that they did). Idempotent."""
        return self.tool_threads.close()

    async def load(self, modules: Iterable[str], *, lifecycle: Any = None, config: Any = None) -> None:
        """Import and register each module, in order; failures are logged and collected, never raised.

        The import and a plain ``register`` each run in a thread of their own, so the event loop
        keeps serving (a signal to stop, the lifecycle calls it makes) and one that hangs can be
        given up on; an ``async def register`` runs on the loop. An import or a register that has
        not returned within `load_timeout_seconds` fails its plugin: its task is cancelled, its
        thread (which cannot be stopped) is left to it, and the process does not wait for it at exit.
        """
        for module in modules:
            try:
                await self._load_one(module, lifecycle, config)
            except PluginError as exc:
                # The plugin's own traceback, when it raised; not importlib's, for a plugin that is not there.
                log.error("%s", exc, exc_info=None if _not_there(exc) else exc.__cause__)
                self.failures.append(exc)
            else:
                self.loaded.append(module)
                log.info("plugin %s loaded", module)

    async def _load_one(self, module: str, lifecycle: Any, config: Any) -> None:
        limit = self.load_timeout_seconds
        importing = asyncio.wrap_future(_in_thread(f"plugin-import-{module}", _import, module))
        mod = await _within(importing, asyncio.get_running_loop().time() + limit, module, "did not import", limit)
        register = getattr(mod, "register", None)
        if not callable(register):
            raise PluginError(module, "has no register(ctx) function")
        ctx = PluginContext(module, lifecycle=lifecycle, config=config)
        try:
            await self._register(module, register, ctx)
        except PluginError:
            raise
        # SystemExit too (a plugin's ``sys.exit("set FOO first")``): raised on in the host, it stopped the
        # host at its start, with no failure told, where one plugin's refusal should fail that plugin only.
        except (Exception, SystemExit) as exc:
            if isinstance(exc, SystemExit) and from_signal_handler(exc):  # the process told to stop meanwhile
                raise
            exc = exc.__cause__ if isinstance(exc, Exited) else exc
            failure = f"register() failed: {type(exc).__name__}: {exc}{_raised_at(module, exc)}"
            raise PluginError(module, failure) from exc
        finally:  # returned, failed, or given up on (its thread may still be registering)
            ctx._staging = False
        self._apply(ctx)

    async def _register(self, module: str, register: Callable[[PluginContext], Any], ctx: PluginContext) -> None:
        limit = self.load_timeout_seconds
        deadline = asyncio.get_running_loop().time() + limit
        late = "register() did not return"
        if inspect.iscoroutinefunction(register):
            returned = register(ctx)
        else:
            running = asyncio.wrap_future(_in_thread(f"plugin-register-{module}", register, ctx))
            returned = await _within(running, deadline, module, late, limit)
        if inspect.isawaitable(returned):  # async def register, or a plain one that returned its coroutine
            # In a task of its own, its sys.exit() went up out of the event loop and stopped the host.
            await _within(asyncio.ensure_future(exits_as_failures(returned)), deadline, module, late, limit)

    def _apply(self, ctx: PluginContext) -> None:
        clashes = [t.name for t in ctx._tools if self.tools.get(t.name) is not None]
        clashes += [f"/{c.name}" for c in ctx._commands if c.name in self.commands or c.name in self.reserved_commands]
        clashes += [f"delegation backend {b.name}" for b in ctx._backends
                    if b.name in self.delegation_backends or b.name == "default"]
        if clashes:
            raise PluginError(ctx.module, f"already registered: {', '.join(clashes)}")
        for tool in ctx._tools:
            self.tools.register(dataclasses.replace(tool, owner=ctx.module, threads=self.tool_threads))
        for name, fn in ctx._hooks:
            self.hooks.register(name, fn, owner=ctx.module)
        for command in ctx._commands:
            self.commands[command.name] = command
        for backend in ctx._backends:
            self.delegation_backends[backend.name] = backend


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except (Exception, SystemExit) as exc:  # SystemExit: see `PluginHost._load_one`
        failure = f"import failed: {type(exc).__name__}: {exc}{_raised_at(module, exc)}"
        if isinstance(exc, ModuleNotFoundError) and exc.name:
            failure += _not_found_hint(module, exc.name)
        raise PluginError(module, failure) from exc


def _not_there(failure: PluginError) -> bool:
    """The plugin's module itself, or a package on its way to it, was not found: the failure's one line says so
    and where Python looked. A module the plugin's own code imports that is not there is not this: its
    traceback leads to the line that imports it."""
    cause = failure.__cause__
    return (isinstance(cause, ModuleNotFoundError) and cause.name is not None
            and (failure.module == cause.name or failure.module.startswith(cause.name + ".")))


def _not_found_hint(module: str, missing: str) -> str:
    """What to do about the module ``missing`` that the import of the plugin ``module`` did not find. The plugin's
    own top module: where Python looked (the folders on PYTHONPATH, the environment's packages, the current
    directory only where it is on the path: a ``switchboard`` command's is not); a plugin author who started it from
    the plugin's folder read only "No module named …". A module of the plugin's own package: where that package was
    found (another of its name may come first). Anything else is a dependency of the plugin that is not installed:
    a package to install, not a path to set."""
    top = module.partition(".")[0]
    if missing == top:
        try:
            cwd = os.getcwd()
        except OSError:  # removed since the process started
            cwd = "?"
        searched = {os.path.abspath(entry or os.curdir) for entry in sys.path}
        folders = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
        shown = ", ".join(f if os.path.isdir(f) else f"{f}: no such folder" for f in folders) or "not set"
        cwd_too = "and" if cwd in searched else "not"
        return (f"; Python looked in the folders on PYTHONPATH ({shown}) and the packages installed in {sys.prefix},"
                f" {cwd_too} in the current directory ({cwd}): put the folder that holds {top} on PYTHONPATH, or"
                " install it into that environment")
    if missing.partition(".")[0] == top:
        package, _, name = missing.rpartition(".")
        found = sys.modules.get(package)
        where = getattr(found, "__path__", None) or [getattr(found, "__file__", None) or "?"]
        return f"; {package} was found in {', '.join(where)}, and holds no {name}"
    return f"; the plugin needs {missing}, which is not installed in {sys.prefix}: install the package that provides it"


def _in_thread(name: str, fn: Callable[[Any], Any], arg: Any) -> concurrent.futures.Future:
    """``fn(arg)`` (a plugin's import or its register) in a daemon thread of its own: one that never
    returns holds up neither the next plugin nor the process's exit (see `PluginThreads` for why
    that is safe)."""
    future: concurrent.futures.Future = concurrent.futures.Future()

    def run() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(fn(arg))
            except BaseException as exc:  # carried to the loop, which reports it as the import's or register()'s
                future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


async def _within(running: asyncio.Future, deadline: float, module: str, late: str, limit: float) -> Any:
    """What ``running`` returns (or raises) by ``deadline``; cancelled, and PluginError (``late``
    within ``limit`` s), if it is not done by then."""
    try:
        done, _ = await asyncio.wait({running}, timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
    finally:
        if not running.done():  # too late, or the start itself was cancelled (a signal to stop)
            running.cancel()
        elif not running.cancelled():  # its stop signal went up out of the loop: not "never retrieved" at exit
            running.exception()
    if not done:
        raise PluginError(module, f"{late} within {limit:g} s")
    return running.result()


def _raised_at(module: str, exc: BaseException) -> str:
    """`` (at <file>:<line>)`` of the plugin's own line that raised: the innermost frame of its
    package, even when a library it called raised deeper. Empty when none ran (a plugin module that
    does not exist, or a SyntaxError, whose own text names the file and line)."""
    package = module.split(".", 1)[0]
    where = ""
    for frame, line in traceback.walk_tb(exc.__traceback__):
        name = frame.f_globals.get("__name__", "")
        if name == package or name.startswith(package + "."):
            where = f" (at {frame.f_code.co_filename}:{line})"
    return where
