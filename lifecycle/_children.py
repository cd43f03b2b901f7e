"""The host path every child takes, whichever way it was launched: how it is built
from its parent, and the completion pipeline it goes through exactly once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent import SYSTEM_CLOCK, AgentSession, Clock, HookRegistry, Model, ToolRegistry, ToolTraceEntry, Usage
from lifecycle._contract import SubagentLifecycleError
from lifecycle.settings import DelegationSettings

log = logging.getLogger("lifecycle.children")

#: Tools no child ever gets: they reach the user, persist memory or schedule work.
UNSAFE_CHILD_TOOLS = frozenset({"clarify", "memory", "send_message", "cronjob", "start_chat"})
DELEGATE_TOOL = "delegate_task"
#: Services children must not inherit, matching the tools taken away above.
_PARENT_ONLY_SERVICES = frozenset({"clarify", "send_message", "memory_path"})


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
    Called at build time, so a changed ``delegation.model`` reaches only new children."""
    memory: MemoryProvider | None = None
    clock: Clock = SYSTEM_CLOCK


@dataclass(frozen=True, slots=True)
class ChildSpec:
    goal: str
    context: str | None = None
    role: str = "leaf"
    allowed_toolsets: tuple[str, ...] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


def effective_role(requested: str, depth: int, max_spawn_depth: int) -> str:
    """An orchestrator keeps delegating only while its depth is below the limit."""
    return "orchestrator" if requested == "orchestrator" and depth < max_spawn_depth else "leaf"


def check_toolsets(host: ChildHost, parent: AgentSession, allowed: tuple[str, ...] | None) -> None:
    """``allowed_toolsets`` may only narrow what the parent has."""
    if not allowed:
        return
    unknown = sorted(set(allowed) - host.tools.toolsets())
    if unknown:
        raise SubagentLifecycleError(f"Unknown toolsets: {', '.join(unknown)}.")
    if parent.enabled_toolsets is not None and not set(allowed) <= parent.enabled_toolsets:
        raise SubagentLifecycleError("Requested toolsets would broaden parent permissions.")


def build_child(
    host: ChildHost, parent: AgentSession, spec: ChildSpec, *, subagent_id: str, model: Model
) -> AgentSession:
    depth = parent.depth + 1
    role = effective_role(spec.role, depth, host.delegation.max_spawn_depth)
    toolsets = parent.enabled_toolsets
    if spec.allowed_toolsets:
        toolsets = frozenset(spec.allowed_toolsets) if toolsets is None else toolsets & set(spec.allowed_toolsets)
    blocked = UNSAFE_CHILD_TOOLS if role == "orchestrator" else UNSAFE_CHILD_TOOLS | {DELEGATE_TOOL}
    # Children inherit the parent's resolved tools (its disabled tools stay disabled), narrowed.
    tools = {
        name: tool
        for name, tool in parent.tools.items()
        if name not in blocked and (toolsets is None or tool.toolset in toolsets)
    }
    return AgentSession(
        model=model,
        tools=tools,
        system_prompt=child_system_prompt(spec, role),
        role=role,
        session_id=subagent_id,
        max_iterations=host.delegation.max_iterations,
        workspace=parent.workspace,
        services={k: v for k, v in parent.services.items() if k not in _PARENT_ONLY_SERVICES},
        enabled_toolsets=toolsets,
        depth=depth,
        metadata={"goal": spec.goal, "parent_session_id": parent.session_id, **spec.metadata},
        clock=host.clock,
        hooks=host.hooks,
    )


def child_system_prompt(spec: ChildSpec, role: str) -> str:
    parts = [
        "You are a subagent working on one task for a parent agent. You have no memory of the "
        "parent's conversation: everything you know is below.",
        f"YOUR TASK:\n{spec.goal}",
    ]
    if spec.context:
        parts.append(f"CONTEXT:\n{spec.context}")
    if role == "orchestrator":
        parts.append("You may split this task further with delegate_task when that clearly helps.")
    parts.append(
        "When you are done, reply with a concise summary: what you did, what you found, "
        "which files you changed, and any problems left open."
    )
    return "\n\n".join(parts)


@dataclass(slots=True)
class ChildOutcome:
    """How a child ended, in the vocabulary of delegate_task result entries."""

    status: str  # completed | failed | error | interrupted | timeout
    exit_reason: str  # completed | max_iterations | interrupted | error | timeout
    summary: str | None
    error: str | None
    api_calls: int = 0
    duration_seconds: float = 0.0
    usage: Usage = Usage()
    cost_usd: float | None = None
    model: str | None = None
    tool_trace: tuple[ToolTraceEntry, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


class ChildRun:
    """One child from build to completion. `finish` runs the completion pipeline at
    most once, whatever way the child ended (or if it never started)."""

    __slots__ = ("host", "parent", "session", "spec", "subagent_id", "parent_turn_id", "model", "_finished")

    def __init__(
        self, host: ChildHost, parent: AgentSession, spec: ChildSpec, subagent_id: str, parent_turn_id: str,
        *, model: Model,
    ):
        self.host = host
        self.model = model
        self.parent = parent
        self.spec = spec
        self.subagent_id = subagent_id
        self.parent_turn_id = parent_turn_id
        self.session: AgentSession | None = None
        self._finished = False

    async def start(self) -> AgentSession:
        self.session = build_child(self.host, self.parent, self.spec, subagent_id=self.subagent_id, model=self.model)
        if self.host.hooks.has("subagent_start"):
            await self.host.hooks.run(
                "subagent_start",
                parent_session_id=self.parent.session_id,
                parent_turn_id=self.parent_turn_id,
                child_session_id=self.session.session_id,
                child_subagent_id=self.subagent_id,
                child_role=self.session.role,
                child_goal=self.spec.goal,
            )
        return self.session

    async def execute(self) -> ChildOutcome:
        """Run the child's one turn; never raises except for cancellation of the caller."""
        session = self.session
        assert session is not None, "start() first"
        started = self.host.clock.monotonic()
        try:
            result = await session.run_turn(self.spec.goal)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in building or running must still end as a result
            log.exception("child %s crashed", self.subagent_id)
            return ChildOutcome("error", "error", None, f"{type(exc).__name__}: {exc}",
                                duration_seconds=self.host.clock.monotonic() - started)
        return outcome_from_turn(result)

    async def finish(self, outcome: ChildOutcome) -> bool:
        """Memory notification, ``subagent_stop`` hooks, release, cost roll-up. Returns
        False (doing nothing) when it already ran."""
        if self._finished:
            return False
        self._finished = True
        child_id = self.session.session_id if self.session else self.subagent_id
        if self.host.memory is not None:
            try:
                await self.host.memory.on_delegation(
                    parent_session_id=self.parent.session_id, goal=self.spec.goal,
                    summary=outcome.summary or "", child_session_id=child_id,
                )
            except Exception:
                log.exception("memory provider failed for child %s", self.subagent_id)
        if self.host.hooks.has("subagent_stop"):
            await self.host.hooks.run(
                "subagent_stop",
                parent_session_id=self.parent.session_id,
                parent_turn_id=self.parent_turn_id,
                child_session_id=child_id,
                child_role=self.session.role if self.session else self.spec.role,
                child_summary=outcome.summary,
                child_status=outcome.status,
                child_exit_reason=outcome.exit_reason,
                tool_call_history=[e.to_dict() for e in outcome.tool_trace],
                duration_ms=int(outcome.duration_seconds * 1000),
            )
        self.parent.add_cost(outcome.usage, outcome.cost_usd, outcome.api_calls)
        self.session = None  # release: the child's conversation is not kept
        return True


def outcome_from_turn(result: Any) -> ChildOutcome:
    if result.exit_reason == "interrupted":
        status, error = "interrupted", result.interrupt_reason or "interrupted"
    elif result.exit_reason == "error":
        status, error = "failed", result.error or "the child's model call failed"
    elif result.text:
        status, error = "completed", None
    else:
        status, error = "failed", "Subagent did not produce a response."
    return ChildOutcome(
        status=status,
        exit_reason=result.exit_reason,
        summary=result.text or None,
        error=error,
        api_calls=result.api_calls,
        duration_seconds=result.duration_seconds,
        usage=result.usage,
        cost_usd=result.cost_usd,
        model=result.model,
        tool_trace=result.tool_trace,
    )
