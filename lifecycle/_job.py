"""What crosses the engine seam: the job an engine runs and the outcome it reports.

Both are plain data that round-trip through JSON (`to_dict`/`from_dict`), so an
engine may carry them to another process or machine: a job holds no live
object (no session, model or tool), only what a worker needs to build the same
child from its own configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from agent import ToolTraceEntry, Usage
from agent._frozen import fast_init
from agent.tools import FileScope
from lifecycle._liveness import Timeout

_EMPTY: Mapping[str, Any] = MappingProxyType({})

PROCESS_EXIT = "interrupted by process exit"
"""The error of a child that was running when its process stopped."""


@fast_init
@dataclass(frozen=True, slots=True)
class ChildJob:
    """One child to run, fully resolved by the service when it was launched."""

    subagent_id: str
    """The child's id: its journal key, its session id, and the id a distributed engine runs it under."""
    parent_session_id: str
    """The session that launched it."""
    parent_turn_id: str
    """The parent turn that launched it."""
    goal: str
    """The task, as the child's first message and in its system prompt."""
    context: str | None = None
    """Background for the child's system prompt."""
    role: str = "leaf"
    """The effective role (``leaf`` or ``orchestrator``), after the depth limit."""
    depth: int = 1
    """Nesting depth; a child of a top-level session has depth 1."""
    toolsets: tuple[str, ...] | None = None
    """The toolsets the child may use (sorted), None for all: never more than its parent's."""
    tools: tuple[str, ...] = ()
    """The names of the tools the child gets: its parent's, narrowed to `toolsets`, minus
    the tools no child (or no leaf) may have."""
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    """The launch request's metadata (JSON-serialisable); the child's session metadata."""
    output_schema: Mapping[str, Any] | None = None
    """A JSON Schema the final answer must match (delegate_task's output contract)."""
    images: tuple[str, ...] = ()
    """Workspace paths or URLs of images for the child's first turn."""
    provider: str | None = None
    """The model provider chosen at launch, as the handle shows it."""
    model: str | None = None
    """The model chosen at launch, as the handle shows it."""
    workspace: str = ""
    """The parent's workspace directory, which the child works in."""
    backend: str | None = None
    """The delegation backend of the session that launched it; None for ``default``."""
    route: str | None = None
    """The backend's option the task was routed to; None for the default child model."""
    persona: str | None = None
    """The route's persona, the first part of the child's system prompt."""
    route_context: str = ""
    """Text the route adds to the child's system prompt (skills, context files)."""
    file_scope: FileScope | None = None
    """The parent's ``file_scope`` service: what its file tools may not touch. A child in the
    parent's process inherits the service itself; a worker builds it from here."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe plain dict; `from_dict` of it gives an equal job."""
        body = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("toolsets", "tools", "images"):
            body[name] = None if body[name] is None else list(body[name])
        body["metadata"] = dict(self.metadata)
        body["output_schema"] = None if self.output_schema is None else dict(self.output_schema)
        scope = self.file_scope
        body["file_scope"] = None if scope is None else {"private": list(scope.private), "own": scope.own}
        return body

    @classmethod
    def from_dict(cls, body: Mapping[str, Any]) -> ChildJob:
        values = dict(body)
        for name in ("tools", "images"):
            values[name] = tuple(values.get(name) or ())
        if values.get("toolsets") is not None:
            values["toolsets"] = tuple(values["toolsets"])
        values["metadata"] = MappingProxyType(dict(values.get("metadata") or {}))
        if (scope := values.get("file_scope")) is not None:
            values["file_scope"] = FileScope(tuple(scope["private"]), scope.get("own"))
        return cls(**values)


@dataclass(slots=True)
class ChildOutcome:
    """How a child ended, in the vocabulary of delegate_task result entries.

    An engine reports it once per child; the service turns it into the terminal
    `SubagentResult` and runs the completion pipeline with it.
    """

    status: str
    """``completed``, ``failed``, ``error``, ``interrupted`` or ``timeout``."""
    exit_reason: str
    """``completed``, ``max_iterations``, ``interrupted``, ``error`` or ``timeout``."""
    summary: str | None
    """The final answer, or the last real text of a child that did not complete."""
    error: str | None
    api_calls: int = 0
    duration_seconds: float = 0.0
    usage: Usage = Usage()
    cost_usd: float | None = None
    model: str | None = None
    tool_trace: tuple[ToolTraceEntry, ...] = ()
    """Metadata of every tool call: never arguments or output."""
    timeout: Timeout | None = None
    """Why a child stopped for lack of progress (status ``timeout``)."""
    schema: dict[str, Any] | None = None
    """``schema_valid`` and, when invalid, ``schema_errors`` and ``schema_note``."""
    error_kind: str | None = None
    """The `ModelError` kind of the model call that ended the child (``exit_reason="error"``);
    ``api_calls`` counts only the calls that answered, so this is the one more that failed."""
    incomplete: str | None = None
    """Why the final answer is not whole though the child completed: ``output_limit`` (the model's
    output-length limit cut it off) or ``content_filter`` (the provider's content filter withheld the
    rest); None when it is whole. See `lifecycle._contract.INCOMPLETE_NOTES`."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe plain dict; `from_dict` of it gives an equal outcome."""
        body = {f.name: getattr(self, f.name) for f in fields(self)}
        body["usage"] = {f.name: getattr(self.usage, f.name) for f in fields(Usage)}
        body["tool_trace"] = [{f.name: getattr(e, f.name) for f in fields(ToolTraceEntry)} for e in self.tool_trace]
        body["timeout"] = None if self.timeout is None else {f.name: getattr(self.timeout, f.name) for f in fields(Timeout)}
        return body

    @classmethod
    def from_dict(cls, body: Mapping[str, Any]) -> ChildOutcome:
        values = dict(body)
        values["usage"] = Usage(**values.get("usage") or {})
        values["tool_trace"] = tuple(
            ToolTraceEntry(**{**e, "argument_keys": tuple(e["argument_keys"])}) for e in values.get("tool_trace") or ()
        )
        values["timeout"] = None if values.get("timeout") is None else Timeout(**values["timeout"])
        return cls(**values)
