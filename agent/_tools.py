"""Tools, toolsets and the registry a session resolves its tools from.

A tool is a handler plus a JSON schema for its arguments. Handlers are called as
``handler(args, ctx)``: async handlers run on the loop; plain functions (as
plugins often write them) run in a worker thread that carries the turn's
context variables, so `lifecycle` calls made from them find their parent turn.
A plugin's plain functions run on its host's `PluginThreads`, which a stopping
process does not wait for: one that never returns cannot keep it alive.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import logging
import re
import signal
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType
from typing import Any

import jsonschema

from agent._errors import ToolError
from agent._plugin_threads import PluginThreads

log = logging.getLogger("agent.tools")

#: Names later issues give meaning to; nothing may register them by accident.
RESERVED_TOOLSETS = frozenset({"delegation", "cronjob", "start_chat"})


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a running tool may know about its caller."""

    session: Any
    """The `agent.AgentSession` whose turn called the tool."""
    call_id: str
    workspace: Path
    services: Mapping[str, Any] = field(default_factory=dict)
    """Host-provided callables, e.g. ``send_message`` and ``clarify``."""
    turn_id: str = ""
    """The turn that called the tool (the host's turn id when it passed one to `run_turn`)."""


Handler = Callable[[dict[str, Any], ToolContext], Any]


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: Handler
    toolset: str
    checks_own_arguments: bool = False
    """The handler validates its arguments itself (with messages made for the model), so the
    generic schema check is skipped; the schema is still what the model sees."""
    owner: str | None = None
    """The plugin (its module) that registered the tool; None for the host's own."""
    threads: PluginThreads | None = field(default=None, repr=False, compare=False)
    """Where a plain-function handler runs; None: the loop's default executor."""
    _validator: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Built once: jsonschema.validate() would re-check the schema itself on every call.
        cls = jsonschema.validators.validator_for(self.parameters, default=jsonschema.Draft202012Validator)
        object.__setattr__(self, "_validator", None if self.checks_own_arguments else cls(self.parameters))

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)},
        }

    async def invoke(self, args: dict[str, Any], ctx: ToolContext) -> str:
        """Validate ``args`` and run the handler; raises `ToolError` with a message for the model (also when
        what it returned cannot be made text, logged here), and what the handler raised otherwise
        (`tool_failure_text` is what the model reads of either)."""
        error = None if self._validator is None else jsonschema.exceptions.best_match(self._validator.iter_errors(args))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "arguments"
            raise ToolError(f"invalid arguments for {self.name} ({_shortened(where)}): {_shortened(error.message)}")
        try:
            if inspect.iscoroutinefunction(self.handler):
                out = await self.handler(args, ctx)
            elif self.threads is None:
                # to_thread copies the current context, so the active turn travels with the call.
                out = await asyncio.to_thread(self.handler, args, ctx)
            else:
                run = functools.partial(contextvars.copy_context().run, self.handler, args, ctx)
                label = f"tool {self.name} (plugin {self.owner})"
                out = await asyncio.wrap_future(self.threads.submit(label, run, _chat_of(ctx.session)))
            if inspect.isawaitable(out):  # a plain function handing back a coroutine: `lambda a, c: fetch(a)`
                out = await out
        except SystemExit as exc:
            if from_signal_handler(exc):  # `switchboard ask` stopped while the tool ran: not the tool's failure
                raise
            raise Exited(exc) from exc
        try:
            return render_tool_output(out)
        # Its __str__ raising, a dict that holds itself: the call did its work, and a model told only that
        # it "failed" ran it again (an invoice sent twice).
        except Exception as exc:
            log.warning("tool %s%s ran, but what it returned could not be turned into text", self.name,
                        f" (plugin {self.owner})" if self.owner else "", exc_info=True)
            raise ToolError(f"{self.name} ran, but what it returned could not be turned into text "
                            f"({exception_text(exc)}); do not call it again only to see its result") from exc


def _chat_of(session: Any) -> str | None:
    """Whose share of the plugin tool threads a call holds: its session's with the subagents it
    started (a child's own subagents count as that child's)."""
    if session is None:
        return None
    return f"session {session.metadata.get('parent_session_id') or session.session_id} and its subagents"


class Exited(Exception):
    """A ``SystemExit`` that a tool's or hook's code raised (a plugin's ``sys.exit()``), as the failure
    it is: raised on, it went up through the turn and out of the event loop (asyncio re-raises a
    task's SystemExit there), and the gateway stopped. The SystemExit is ``__cause__``; what the
    model or the log reads names it, not this. KeyboardInterrupt (Ctrl-C) still goes through."""


async def exits_as_failures(awaitable: Any) -> Any:
    """Await ``awaitable``, a `SystemExit` out of it raised as `Exited`: for code run as a task of
    its own, whose SystemExit no ``except`` of its awaiter sees before the event loop has stopped.
    One a signal handler raised (`from_signal_handler`) is the process's stop, and goes on up."""
    try:
        return await awaitable
    except SystemExit as exc:
        if from_signal_handler(exc):
            raise
        raise Exited(exc) from exc


def from_signal_handler(exc: BaseException) -> bool:
    """Whether ``exc`` came out of a Python signal handler: ``switchboard``'s SIGTERM handler ends the
    process so until its command sets its own (a worker loads its plugins first). Such a handler runs in
    the main thread wherever that is, in a plugin's ``async def register`` or starting its thread too:
    taken for the plugin's ``sys.exit()``, the stop was lost and the worker ran on."""
    handlers = {_code_of(signal.getsignal(signum)) for signum in signal.valid_signals()}
    return any(frame.f_code in handlers for frame, _ in traceback.walk_tb(exc.__traceback__))


def _code_of(handler: Any) -> CodeType | None:
    """The code a signal handler runs, or None (SIG_DFL, SIG_IGN, a C function). A plugin may set its own
    handler as a `functools.partial` or an object with ``__call__``: neither has ``__code__``, and its stop
    was taken for the tool's ``sys.exit()``."""
    while isinstance(handler, functools.partial):
        handler = handler.func
    if not callable(handler):
        return None
    code = getattr(handler, "__code__", None)
    return code if code is not None else getattr(getattr(type(handler), "__call__", None), "__code__", None)


_ECHO_CHARS = 200


def _shortened(text: str) -> str:
    """``text`` with all but its first and last `_ECHO_CHARS` characters left out: jsonschema's message
    quotes the value it refuses whole (``['…'] is not of type 'string'``), and a file's content sent
    as a list came back to the model as long again, in every later request of the conversation."""
    if len(text) <= 2 * _ECHO_CHARS + 20:
        return text
    return f"{text[:_ECHO_CHARS]} […{len(text) - 2 * _ECHO_CHARS} characters…] {text[-_ECHO_CHARS:]}"


def tool_failure_text(name: str, exc: Exception) -> str:
    """What the model reads of ``exc``, raised by the tool ``name``: a `ToolError`'s own text, else
    ``<name> failed: <type>: <text>`` (`exception_text`). Never raises: an exception's ``__str__`` is
    its author's code, and one that raised (or returned no string) escaped the handler meant to report
    it, ending the turn (or the Temporal child) whose tool failed."""
    if isinstance(exc, ToolError):
        try:
            text = str(exc)
        except Exception:
            text = None
        if isinstance(text, str):
            return text
    return f"{name} failed: {exception_text(exc)}"


def exception_text(exc: BaseException) -> str:
    """``<type>: <text>`` of ``exc``, its text `_shortened` (the megabytes a tool choked on would be read
    again in every later request of the conversation); never raises."""
    if isinstance(exc, Exited) and isinstance(exc.__cause__, SystemExit):
        exc = exc.__cause__
    try:
        text = str(exc)
    except Exception as problem:
        text = f"(its text could not be shown: {type(problem).__name__})"
    return f"{type(exc).__name__}: {_shortened(text)}"


_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD. What a tool decoded with
    ``surrogateescape`` (a file name or command output that is not UTF-8) holds them, and no
    model request, log line or stored message can encode them."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def render_tool_output(out: Any) -> str:
    if out is None:
        return ""
    if isinstance(out, str):
        return out
    try:
        return json.dumps(out, ensure_ascii=False, default=str)
    except TypeError:  # a key JSON cannot hold (a date, a tuple): ``default`` is never asked about keys
        return json.dumps(_str_keys(out), ensure_ascii=False, default=str)


_JSON_KEYS = (str, int, float, bool, type(None))


def _str_keys(value: Any) -> Any:
    """``value`` with each dict key JSON cannot hold as its `str`: a plugin's tool answering stats by day
    (``{date(2024, 5, 1): 3}``) failed after it had run, and the model, told so, ran it again."""
    if isinstance(value, dict):
        return {k if isinstance(k, _JSON_KEYS) else str(k): _str_keys(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_str_keys(v) for v in value]
    return value


class ToolRegistry:
    """Named toolsets of tools. Registration order is kept; names are unique."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        jsonschema.Draft202012Validator.check_schema(tool.parameters)
        self._tools[tool.name] = tool

    def add(
        self, name: str, description: str, parameters: Mapping[str, Any], handler: Handler, *, toolset: str
    ) -> Tool:
        tool = Tool(name, description, parameters, handler, toolset)
        self.register(tool)
        return tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def toolsets(self) -> frozenset[str]:
        return frozenset(t.toolset for t in self._tools.values())

    def __iter__(self):
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def copy(self) -> ToolRegistry:
        clone = ToolRegistry()
        clone._tools = dict(self._tools)
        return clone

    def resolve(
        self, enabled_toolsets: Iterable[str] | None = None, disabled_tools: Iterable[str] = ()
    ) -> dict[str, Tool]:
        """The tools a session may call: ``None`` enables every toolset."""
        enabled = None if enabled_toolsets is None else frozenset(enabled_toolsets)
        disabled = frozenset(disabled_tools)
        return {
            t.name: t
            for t in self._tools.values()
            if (enabled is None or t.toolset in enabled) and t.name not in disabled
        }
