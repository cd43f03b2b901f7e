"""The worker's side of a child: building it, and its model calls and tool calls as activities.

A worker builds a child from the job and its own configuration (`WorkerToolbox`):
the tools the job names, the model it was launched with, the workspace path the
gateway gave. Every activity heartbeats while it runs, so a worker that dies is
noticed and the call is retried on another one; a cancellation request reaches the
call at its next heartbeat. A failure that retrying cannot cure (a model error the
provider's own retries did not fix, a child this worker cannot build) is raised as
a non-retryable `ApplicationError`; tool failures are results, never errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from agent import AgentSession, HookRegistry, Model, ModelError, ToolContext, ToolError, ToolRegistry, tool_failure_text
from agent._errors import model_failure_text
from agent.images import first_turn_content_async
from agent.tools._per_turn import count_by_session_id
from agent.tools.file_scope import SERVICE as FILE_SCOPE
from lifecycle._child_run import NOT_SHOWN, mask_error
from lifecycle._children import UNSAFE_CHILD_TOOLS, child_system_prompt
from lifecycle._job import ChildJob
from lifecycle._project_context import ProjectContext
from lifecycle._routing import DEFAULT_BACKEND
from lifecycle.temporal._wire import (
    MODEL_CALL,
    MODEL_ERROR,
    PREPARE,
    SETUP_ERROR,
    TOOL_CALL,
    oversize,
    request_from_wire,
    response_to_wire,
)

log = logging.getLogger("lifecycle.temporal.worker")

_WORKSPACE_TTL_SECONDS = 5.0

ModelFor = Callable[[str | None, str | None], Model]
"""``(provider, model)`` as the job names them (``DemoModel``, ``demo``) -> the model to call."""
RouteModel = Callable[[str, str], Model | None]
"""``(backend, route)`` of a routed child -> its route's model; None when the route names none
(the child then runs on the model its job names)."""


@dataclass(frozen=True, slots=True)
class WorkerToolbox:
    """What a worker builds children from, in place of the parent's live session."""

    tools: ToolRegistry
    """Every tool this worker has; a child gets those its job names."""
    model_for: ModelFor
    route_model: RouteModel | None = None
    """Resolves routed children's models (``delegation.backend`` routes); without it they run
    on the model their job names, through ``model_for``."""
    services: Mapping[str, Any] = field(default_factory=dict)
    """Host services for `ToolContext.services` (children never get the parent-only ones)."""
    hooks: HookRegistry | None = None
    redact: Callable[[str], str] | None = None
    """Masks secrets in a failure's text before it leaves the worker (the gateway's worker passes
    `gateway.logging.redact`): a tool's error, which the child's model reads and may quote to its parent,
    and a failed model call's or build's, which end the child; each is kept in the workflow's history too.
    Masked here, in an activity: the workflow must stay deterministic."""


class ChildActivities:
    """The activities one worker registers; methods are bound to its toolbox."""

    def __init__(self, toolbox: WorkerToolbox) -> None:
        self.toolbox = toolbox
        self._project = ProjectContext()
        self._workspaces = _Workspaces()
        self.identity = f"{socket.gethostname()}"
        self.in_flight: dict[object, str] = {}
        """The model and tool calls running now, each said as the log names it: what a stop waits for."""

    @contextlib.contextmanager
    def _running(self, what: str) -> Iterator[None]:
        key = object()
        self.in_flight[key] = f"{what} of child {activity.info().workflow_id}"
        try:
            yield
        finally:
            del self.in_flight[key]

    @activity.defn(name=PREPARE)
    async def prepare(self, body: dict[str, Any]) -> dict[str, Any]:
        """Everything the workflow needs to build the child that only this machine can know:
        the system prompt with the workspace's project context, the first message (images
        read from the workspace), the schemas of the tools it gets, and its model's traits.
        A failure other than a setup error (a plugin's model that raises when its traits are read)
        is retried as Temporal retries it, its text masked: the last is kept in the workflow's
        history, and the child's parent reads it."""
        try:
            return await self._prepare(body)
        except Exception as exc:
            if isinstance(exc, ApplicationError) and exc.type == SETUP_ERROR:  # ours, masked where it is made
                raise
            log.warning("preparing child %s failed", activity.info().workflow_id, exc_info=True)
            name = type(exc).__name__
            # Benign to the SDK, which would log its traceback again, of this raise.
            raise ApplicationError(self._masked(f"{name}: {exc}", f"{name}: {NOT_SHOWN}"), type=name,
                                   category=ApplicationErrorCategory.BENIGN) from None

    async def _prepare(self, body: dict[str, Any]) -> dict[str, Any]:
        job = ChildJob.from_dict(body)
        workspace = Path(job.workspace)
        if not await self._workspaces.exists(workspace):
            raise _setup_error(f"the workspace {workspace} does not exist on worker {self.identity}; mount the "
                               "gateway's workspace at the same path on every worker (docs/scale-out.md)")
        model = self._model(job.provider, job.model, job.backend, job.route)
        context = await self._project.section(workspace)
        content: Any = job.goal
        if job.images:
            content = await first_turn_content_async(
                job.goal, job.images, workspace=workspace, supports_vision=bool(getattr(model, "supports_vision", False)),
                file_scope=job.file_scope)
        tools, missing = [], []
        for name in job.tools:
            tool = self.toolbox.tools.get(name)
            if tool is None or name in UNSAFE_CHILD_TOOLS:
                missing.append(name)
                continue
            tools.append({"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters),
                          "toolset": tool.toolset})
        if missing:
            log.warning("child %s: this worker has no %s; the child runs without", job.subagent_id, ", ".join(missing))
        prepared = {
            "system_prompt": child_system_prompt(job, context),
            "content": content,
            "tools": tools,
            "model": {"name": getattr(model, "name", job.model), "context_window": model.context_window,
                      "supports_vision": bool(getattr(model, "supports_vision", False))},
        }
        # Images read for a vision model travel inline. Returned over the limit, the result fails the
        # workflow task that records it, which Temporal retries for ever: the child never ends.
        if (too_big := oversize("the child's first message with its images", prepared)) is not None:
            raise _setup_error(f"{too_big}; give it fewer or smaller images")
        return prepared

    @activity.defn(name=MODEL_CALL)
    async def model_call(self, body: dict[str, Any]) -> dict[str, Any]:
        model = self._model(body.get("provider"), body.get("model"), body.get("backend"), body.get("route"))
        with self._running("the model call"), heartbeating(body.get("heartbeat", 5.0)):
            try:
                response = await model.complete(request_from_wire(body["request"]))
            except ModelError as exc:
                # Benign: the child reports it; a worker log line per failed call would be noise.
                masked = self._masked(str(exc), model_failure_text(exc.kind, NOT_SHOWN))
                raise ApplicationError(_fitting_error(masked), exc.kind, type=MODEL_ERROR,
                                       non_retryable=True, category=ApplicationErrorCategory.BENIGN) from None
            except asyncio.CancelledError:
                if _abandoned():
                    return {}
                raise
            except Exception as exc:  # a provider bug fails the call, as it would in-process
                log.warning("model call failed", exc_info=True)
                name = type(exc).__name__
                raise ApplicationError(_fitting_error(self._masked(f"{name}: {exc}", f"{name}: {NOT_SHOWN}")),
                                       "error", type=MODEL_ERROR, non_retryable=True,
                                       category=ApplicationErrorCategory.BENIGN) from None
        wire = response_to_wire(response)
        if (too_big := oversize("the model's answer", wire)) is not None:
            # Sent anyway, Temporal refuses it and the call is retried (and paid for) until its stall limit.
            raise ApplicationError(too_big, "bad_request", type=MODEL_ERROR, non_retryable=True)
        return wire

    @activity.defn(name=TOOL_CALL)
    async def tool_call(self, body: dict[str, Any]) -> dict[str, Any]:
        """``{"ok": true, "output": ...}`` or ``{"ok": false, "error": ...}`` (the text the model reads)."""
        name = body["name"]
        tool = self.toolbox.tools.get(name)
        if tool is None or name in UNSAFE_CHILD_TOOLS:
            return {"ok": False, "error": f"{name} is not available on worker {self.identity}"}
        session = self._stand_in(ChildJob.from_dict(body["child"]))
        ctx = ToolContext(session, body.get("call_id", ""), session.workspace, session.services, body.get("turn_id", ""))
        with self._running(f"tool {name}"), heartbeating(body.get("heartbeat", 5.0)):
            try:
                result = {"ok": True, "output": await tool.invoke(body.get("args") or {}, ctx)}
            except ToolError as exc:  # its text is the tool's own, as long as the tool made it
                result = {"ok": False, "error": self._tool_failure(name, exc)}
            except asyncio.CancelledError:
                if _abandoned():
                    return {}
                raise
            except Exception as exc:  # a tool bug must not end the child: the model reads what went wrong
                log.warning("tool %s raised %s", name, type(exc).__name__, exc_info=True)
                result = {"ok": False, "error": self._tool_failure(name, exc)}
        # Sent anyway, an output or an error over the limit is refused by Temporal, and the tool runs
        # again and again until its stall limit (the child waiting all that time).
        too_big = oversize(f"{name}'s {'output' if result['ok'] else 'error'}", result)
        return result if too_big is None else {"ok": False, "error": too_big}

    def _model(self, provider: str | None, name: str | None, backend: str | None = None,
               route: str | None = None) -> Model:
        try:
            if route is not None and self.toolbox.route_model is not None:
                model = self.toolbox.route_model(backend or DEFAULT_BACKEND, route)
                if model is not None:
                    return model
            return self.toolbox.model_for(provider, name)
        except Exception as exc:
            what = f"route {route!r}" if route is not None else f"model {name!r} ({provider})"
            head = f"worker {self.identity} cannot build the {what}"
            raise _setup_error(self._masked(f"{head}: {exc}", f"{head}: {NOT_SHOWN}")) from None

    def _masked(self, text: str, fallback: str) -> str:
        """``text`` masked by the toolbox's redactor; ``fallback`` when that raises (one of a worker's own):
        raised, a tool's failure failed its activity, which ran the tool again and again to its stall limit."""
        return mask_error(self.toolbox.redact, text, fallback)

    def _tool_failure(self, name: str, exc: Exception) -> str:
        return self._masked(tool_failure_text(name, exc), f"{name} failed: {NOT_SHOWN}")

    def _stand_in(self, job: ChildJob) -> AgentSession:
        """The child as its tools see it (``ctx.session``): its id, role, depth, toolsets,
        workspace and tools. Its conversation lives in the workflow, not here. One is built per call:
        the per-turn limits of its tools (`agent.tools._per_turn`) count by the child's id."""
        tools = {n: t for n in job.tools if (t := self.toolbox.tools.get(n)) is not None}
        session = AgentSession(
            model=self._model(job.provider, job.model, job.backend, job.route), tools=tools, role=job.role,
            session_id=job.subagent_id,
            workspace=Path(job.workspace), services=_services(self.toolbox.services, job),
            enabled_toolsets=None if job.toolsets is None else frozenset(job.toolsets), depth=job.depth,
            metadata={**job.metadata, "parent_session_id": job.parent_session_id}, hooks=self.toolbox.hooks,
        )
        count_by_session_id(session)
        return session


def _services(services: Mapping[str, Any], job: ChildJob) -> Mapping[str, Any]:
    """The worker's services, with the file scope the child's parent had (its chat's, in the gateway)."""
    return services if job.file_scope is None else {**services, FILE_SCOPE: job.file_scope}


class _Workspaces:
    """Which workspaces exist on this worker, looked up off the event loop and remembered for
    a few seconds: a burst of children in one workspace shares one trip to a thread (a trip per
    child costs a short child about a tenth of its worker CPU). A missing one is looked up
    again each time, so mounting it takes effect at once."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[float, asyncio.Task[bool]]] = {}

    async def exists(self, workspace: Path) -> bool:
        key, now, loop = str(workspace), time.monotonic(), asyncio.get_running_loop()
        entry = self._seen.get(key)
        if entry is None or now - entry[0] >= _WORKSPACE_TTL_SECONDS or entry[1].get_loop() is not loop:
            entry = self._seen[key] = (now, loop.create_task(asyncio.to_thread(workspace.is_dir)))
        task = entry[1]
        # Shielded: one child being cancelled must not cancel the look-up the others wait for.
        found = task.result() if task.done() else await asyncio.shield(task)
        if not found and self._seen.get(key) is entry:
            del self._seen[key]
        return found


@contextlib.contextmanager
def heartbeating(interval: float) -> Iterator[None]:
    """Heartbeat every ``interval`` seconds while the block runs: the child's liveness signal,
    and how a cancellation request reaches a call in flight."""

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(interval)

    task = asyncio.ensure_future(beat())
    try:
        yield
    finally:
        task.cancel()


def _abandoned() -> bool:
    """Whether the call was cut off because Temporal no longer has it: a stop ends the child's
    workflow in the task that cancels the call, so its next heartbeat finds neither. No one waits
    for its result then, and ending it quietly is all there is to do: raised, the cancellation
    would be logged by temporalio as the call failing (it is quiet only for a cancel the workflow
    asked of a call it still has), a warning with a traceback on the worker for every stop."""
    details = activity.cancellation_details()
    if details is None or not details.not_found:
        return False
    info = activity.info()
    log.debug("call %s of child %s cut off: Temporal no longer has it", info.activity_id, info.workflow_id)
    return True


_ERROR_HEAD_CHARS = 4000


def _fitting_error(message: str) -> str:
    """A failed model call's ``message`` (a provider's error may quote the megabytes it was sent), cut to its
    head when it would not fit in a payload: Temporal replaces a failure over the limit with its own
    ``Failure exceeds size limit.``, and the child ended with no word of what the model said."""
    too_big = oversize("the model's error", message)
    return message if too_big is None else f"{message[:_ERROR_HEAD_CHARS]} […] ({too_big})"


def _setup_error(message: str) -> ApplicationError:
    """A child this worker cannot build, for a reason its operator mends (a workspace not mounted here, a model
    it cannot make): said in one line of its log. Benign to the SDK, which logged it as a traceback of its own
    frames, the reason on the last of some fifteen lines."""
    log.warning("child %s: %s", activity.info().workflow_id, message)
    return ApplicationError(message, type=SETUP_ERROR, non_retryable=True, category=ApplicationErrorCategory.BENIGN)
