"""How a child is planned and built from its parent: the same for lifecycle launches
and delegate_task, so tools, prompts and limits never differ between the two."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent import (
    SYSTEM_CLOCK,
    AgentSession,
    Clock,
    CompactionPolicy,
    Compactor,
    HookRegistry,
    Model,
    Tool,
    ToolRegistry,
)
from agent._frozen import fast_init
from agent.tools.file_scope import SERVICE as FILE_SCOPE
from lifecycle._contract import SubagentLifecycleError
from lifecycle._job import ChildJob
from lifecycle._output_schema import contract_prompt
from lifecycle._routing import DEFAULT_BACKEND, ChildRoute, Routing, listed_names
from lifecycle.settings import DelegationSettings

log = logging.getLogger("lifecycle.children")

#: Tools no child ever gets: they reach the user, persist memory or schedule work.
UNSAFE_CHILD_TOOLS = frozenset({"clarify", "memory", "send_message", "send_file", "cronjob", "start_chat"})
DELEGATE_TOOL = "delegate_task"
_LEAF_BLOCKED = UNSAFE_CHILD_TOOLS | {DELEGATE_TOOL}
#: Services children must not inherit, matching the tools taken away above.
_PARENT_ONLY_SERVICES = frozenset({"clarify", "send_message", "send_file", "memory_path", "note_key"})


class MemoryProvider(Protocol):
    """Told about every finished child, so a memory backend can learn from delegations."""

    async def on_delegation(self, *, parent_session_id: str, goal: str, summary: str, child_session_id: str) -> None: ...


@dataclass(frozen=True, slots=True)
class ChildHost:
    """What the lifecycle core needs from whoever hosts it (the gateway or the CLI)."""

    tools: ToolRegistry
    hooks: HookRegistry
    delegation: DelegationSettings = DelegationSettings()
    child_model: Callable[[AgentSession], Model] | None = None
    """The model for a new child of this parent; None means the parent's own model.
    Called at launch, so a changed ``delegation.model`` reaches only new children."""
    memory: MemoryProvider | None = None
    clock: Clock = SYSTEM_CLOCK
    compaction: CompactionPolicy | None = None
    """The parent's compaction policy; children apply ``delegation.compression_threshold_tokens`` on top."""
    routing: Routing = field(default_factory=Routing)
    """The delegation backends tasks may be routed through (see `lifecycle.Routing`)."""
    inline_delegate: Callable[[str], Tool | None] | None = None
    """The inline ``delegate_task`` for an orchestrator child of a session that delegates
    through the named backend; None gives every orchestrator the registry's one."""


@fast_init
@dataclass(frozen=True, slots=True)
class ChildSpec:
    """One child as a caller asks for it (a launch request or a delegate_task task), before
    the service resolves it into a `ChildJob`."""

    goal: str
    context: str | None = None
    role: str = "leaf"
    """The requested role; an orchestrator at the depth limit becomes a leaf."""
    allowed_toolsets: tuple[str, ...] | None = None
    """Narrows the parent's toolsets; None inherits them."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    output_schema: Mapping[str, Any] | None = None
    """A JSON Schema the final answer must match (delegate_task's output contract)."""
    images: tuple[str, ...] = ()
    """Local paths or URLs for the child's first turn."""
    task_index: int = 0
    """The task's position in a delegate_task call."""
    route: str | None = None
    """The option of ``backend`` the task asked for; None for the default child model."""
    backend: str | None = None
    """The delegation backend of the session that launched it; None for ``default``."""


def effective_role(requested: str, depth: int, max_spawn_depth: int) -> str:
    """An orchestrator keeps delegating only while its depth is below the limit."""
    return "orchestrator" if requested == "orchestrator" and depth < max_spawn_depth else "leaf"


def check_toolsets(host: ChildHost, parent: AgentSession, allowed: tuple[str, ...] | None) -> None:
    """``allowed_toolsets`` may only narrow what the parent has. The unknown names are echoed as
    `listed_names` cuts them: whole, a name of 100,000 characters came back whole in the error."""
    if not allowed:
        return
    unknown = sorted(set(allowed) - host.tools.toolsets())
    if unknown:
        raise SubagentLifecycleError(f"Unknown toolsets: {listed_names(unknown)}.")
    if parent.enabled_toolsets is not None and not set(allowed) <= parent.enabled_toolsets:
        raise SubagentLifecycleError("Requested toolsets would broaden parent permissions.")


def plan_job(
    host: ChildHost, parent: AgentSession, spec: ChildSpec, *, subagent_id: str, parent_turn_id: str, model: Model,
    route: ChildRoute | None = None, delegates: bool = True,
) -> ChildJob:
    """Resolve a launch into the job an engine runs: the effective role and depth, the
    toolsets (only ever narrowed, by the task and by its route) and the tool names the child gets.
    An orchestrator runs as a leaf at the depth limit, and when ``delegate_task`` is not among its tools:
    also when the engine runs children elsewhere (``delegates`` false: Temporal's workers have no lifecycle
    to give them one)."""
    depth = parent.depth + 1
    role = effective_role(spec.role, depth, host.delegation.max_spawn_depth)
    toolsets = parent.enabled_toolsets
    if spec.allowed_toolsets:  # an empty tuple asks for no narrowing
        toolsets = _narrow(toolsets, spec.allowed_toolsets)
    if route is not None and route.toolsets is not None:  # a route's empty tuple means no toolsets at all
        toolsets = _narrow(toolsets, route.toolsets)
    blocked = UNSAFE_CHILD_TOOLS if role == "orchestrator" else _LEAF_BLOCKED
    # Children inherit the parent's resolved tools (its disabled tools stay disabled), narrowed.
    tools = [
        name for name, tool in parent.tools.items()
        if name not in blocked and (toolsets is None or tool.toolset in toolsets)
    ] if parent.tools else ()
    if DELEGATE_TOOL in tools and (not delegates or host.tools.get(DELEGATE_TOOL) is None):
        tools.remove(DELEGATE_TOOL)
    if role == "orchestrator" and DELEGATE_TOOL not in tools:
        # Narrowed out of delegation (its toolsets, its route's, its parent's): told it may delegate, and
        # shown as an orchestrator, it would plan on a tool it lacks.
        role = "leaf"
    return ChildJob._build(  # positional, in field order: this runs for every child
        subagent_id, parent.session_id, parent_turn_id, spec.goal, spec.context, role, depth,
        None if toolsets is None else tuple(sorted(toolsets)), tuple(tools), spec.metadata,
        spec.output_schema, spec.images, type(model).__name__, getattr(model, "name", None), str(parent.workspace),
        spec.backend if spec.backend != DEFAULT_BACKEND else None, spec.route,
        route.system_prompt if route is not None else None, route.context if route is not None else "",
        parent.services.get(FILE_SCOPE),
    )


def _narrow(toolsets: frozenset[str] | None, allowed: tuple[str, ...]) -> frozenset[str]:
    return frozenset(allowed) if toolsets is None else toolsets & set(allowed)


def build_child(
    host: ChildHost, job: ChildJob, parent: AgentSession, model: Model, project_context: str = ""
) -> AgentSession:
    """The child's session, from its job and its live parent: the parent's own tool objects,
    services and redactor (what its tools' failures read masked by), and the model chosen at launch."""
    tools = {}
    for name in job.tools:
        tool = _inline_delegate(host, job) if name == DELEGATE_TOOL else parent.tools.get(name)
        if tool is not None:
            tools[name] = tool
    metadata = {"goal": job.goal, "parent_session_id": job.parent_session_id}
    if job.metadata:  # unpacking a mapping proxy costs microseconds even when it is empty (the usual case)
        metadata = {**job.metadata, **metadata}  # ours win
    services = parent.services  # the session copies it: filtered only when there is something to leave out
    if not _PARENT_ONLY_SERVICES.isdisjoint(services):
        services = {k: v for k, v in services.items() if k not in _PARENT_ONLY_SERVICES}
    return AgentSession(
        model=model,
        tools=tools,
        system_prompt=child_system_prompt(job, project_context, host.delegation.max_spawn_depth),
        role=job.role,
        session_id=job.subagent_id,
        max_iterations=host.delegation.max_iterations,
        workspace=parent.workspace,
        services=services,
        enabled_toolsets=None if job.toolsets is None else frozenset(job.toolsets),
        depth=job.depth,
        metadata=metadata,
        clock=host.clock,
        hooks=host.hooks,
        compactor=_child_compactor(host),
        redact=parent.redact,
    )


def _inline_delegate(host: ChildHost, job: ChildJob) -> Tool | None:
    """An orchestrator waits for its own children: always an inline variant of delegate_task
    (routing through its parent's backend), never a background one its parent may hold."""
    inline = host.tools.get(DELEGATE_TOOL)
    if inline is not None and job.backend and host.inline_delegate is not None:
        inline = host.inline_delegate(job.backend) or inline
    return inline


def _child_compactor(host: ChildHost) -> Compactor | None:
    if host.compaction is None:
        return None
    return Compactor(host.compaction.for_child(host.delegation.compression_threshold_tokens))


def child_system_prompt(job: ChildJob, project_context: str = "", max_spawn_depth: int = 1) -> str:
    """A routed child's persona comes first: it runs as that profile."""
    parts = [job.persona] if job.persona else []
    parts += [
        "You are a subagent working on one task for a parent agent. You have no memory of the "
        "parent's conversation: everything you know is below.",
        f"YOUR TASK:\n{job.goal}",
    ]
    if job.context:
        parts.append(f"CONTEXT:\n{job.context}")
    if job.route_context:
        parts.append(job.route_context)
    if project_context:
        parts.append(project_context)
    if job.role == "orchestrator":
        leaves = "must be leaves" if job.depth + 1 >= max_spawn_depth else "may orchestrate too"
        parts.append(
            "You may split this task further with delegate_task when that clearly helps: you are at depth "
            f"{job.depth} of at most {max_spawn_depth}, so subagents you start {leaves}."
        )
    if job.output_schema is not None:
        parts.append(contract_prompt(dict(job.output_schema)))
    else:
        parts.append(
            "When you are done, reply with a concise summary: what you did, what you found, "
            "which files you changed, and any problems left open."
        )
    return "\n\n".join(parts)
