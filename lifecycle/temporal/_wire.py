"""What travels between the gateway, the Temporal service and the workers, as plain JSON.

The workflow's input is a `ChildJob` and the `ChildLimits` the gateway resolved at
launch; its result is a `ChildOutcome`. Activities take and return dicts made
here, so the wire format is ours, not the data converter's guess about a class.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent import CompactionPolicy, ModelRequest, ModelResponse, ToolCall, Usage
from lifecycle._liveness import idle_cap
from lifecycle.settings import DelegationSettings

WORKFLOW = "switchboard.child"
PREPARE = "switchboard.prepare_child"
MODEL_CALL = "switchboard.model_call"
TOOL_CALL = "switchboard.tool_call"
STEER = "steer"
RUNNING_UPDATE = "running"
"""Update that completes once a worker has built the child and schedules its first model call."""
ACTIVITY_QUERY = "activity"

MODEL_ERROR = "ModelError"
"""ApplicationError type of a model call that failed for good (the provider's retries are spent)."""
SETUP_ERROR = "ChildSetupError"
"""ApplicationError type of a child this worker cannot build (a missing workspace, no such model)."""

PAYLOAD_LIMIT_BYTES = 2 * 1024 * 1024
"""Temporal's default limit on one payload (the server's ``limit.blobSize.error``). Past it the SDK
refuses to send: an activity's result fails the call, which is then retried until its stall limit,
and a workflow's command (a model call carrying the conversation) fails every workflow task for
ever. Each side checks its payloads against it first, and ends the call or the child saying so."""
_ENVELOPE_BYTES = 1024
"""Room for what Temporal adds to a payload (its encoding metadata)."""


_encode = json.JSONEncoder(separators=(",", ":")).encode
"""JSON as the SDK's converter writes it (compact, non-ASCII escaped)."""


def oversize(what: str, body: Any, size: int | None = None) -> str | None:
    """Why ``body`` cannot travel through Temporal, as ``what`` names it; None when it fits. Measured
    as the SDK's JSON converter encodes it, unless the caller knows its ``size`` that way already."""
    if size is None:
        size = len(_encode(body))
    if size + _ENVELOPE_BYTES <= PAYLOAD_LIMIT_BYTES:
        return None
    return (f"{what} ({size / 2**20:.1f} MB) is over Temporal's payload limit ({PAYLOAD_LIMIT_BYTES // 2**20} MB),"
            " which bounds what a child on a worker can pass on (docs/scale-out.md)")


class ConversationSize:
    """The encoded size of a model call's body, its conversation measured a message at a time: each
    message once, as it is added, instead of the whole conversation again for every call (a child's
    time in its workflow then grew with the square of its conversation).

    Exact, because an `AgentSession` only appends to its ``messages``, or replaces some of them and
    bumps its ``history_version`` (then they are all measured again), and a list's JSON is its items'
    JSON between brackets, joined by commas, whatever comes before or after them."""

    __slots__ = ("_messages", "_version", "_count", "_bytes")

    def __init__(self) -> None:
        self._messages: list[Any] | None = None
        self._version = -1
        self._count = self._bytes = 0

    def body(self, body: Mapping[str, Any], messages: list[Any], version: int) -> int:
        """The encoded size of ``body``, a model call whose ``body["request"]["messages"]`` is ``messages``,
        the conversation at ``history_version`` ``version``."""
        if messages is not self._messages or version != self._version or len(messages) < self._count:
            self._messages, self._version, self._count, self._bytes = messages, version, 0, 0
        self._bytes += sum(len(_encode(m)) for m in messages[self._count:])
        self._count = len(messages)
        listed = 2 + self._bytes + max(0, self._count - 1)  # [a,b,c]
        rest = {**body, "request": {**body["request"], "messages": []}}
        return len(_encode(rest)) - 2 + listed


@dataclass(frozen=True, slots=True)
class ChildLimits:
    """The gateway's `delegation.*` policy for one child, fixed when it is launched.

    The in-process engine reads these settings again at every check; a workflow takes
    them as input, so a running child on a worker keeps the limits it started with.
    """

    max_iterations: int = 250
    stale_between_turns_seconds: float = 450.0
    """A model call (with its retries) that takes this long is a stall."""
    stale_in_tool_seconds: float = 1200.0
    """A tool call (with its retries) that takes this long is a stall."""
    idle_cap_seconds: float | None = None
    """``delegation.child_timeout_seconds`` as applied (None: off): bounds a model call too,
    with a budget warning steered into the child at 80 %."""
    heartbeat_interval_seconds: float = 5.0
    """How often a running activity heartbeats; three missed heartbeats mean its worker is
    gone, and the call is retried on another one."""
    compaction: Mapping[str, Any] | None = None
    """The child's `CompactionPolicy` fields; None: no compaction."""

    @classmethod
    def from_settings(cls, delegation: DelegationSettings, compaction: CompactionPolicy | None) -> ChildLimits:
        policy = None if compaction is None else compaction.for_child(delegation.compression_threshold_tokens)
        return cls(
            max_iterations=delegation.max_iterations,
            stale_between_turns_seconds=delegation.stale_between_turns_seconds,
            stale_in_tool_seconds=delegation.stale_in_tool_seconds,
            idle_cap_seconds=idle_cap(delegation),
            heartbeat_interval_seconds=delegation.heartbeat_interval_seconds,
            compaction=None if policy is None else dataclasses.asdict(policy),
        )

    @property
    def heartbeat_timeout_seconds(self) -> float:
        return max(1.0, 3 * self.heartbeat_interval_seconds)

    def to_dict(self) -> dict[str, Any]:
        body = dataclasses.asdict(self)
        body["compaction"] = None if self.compaction is None else dict(self.compaction)
        return body

    @classmethod
    def from_dict(cls, body: Mapping[str, Any]) -> ChildLimits:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in body.items() if k in names})


def request_to_wire(request: ModelRequest) -> dict[str, Any]:
    return {
        "messages": list(request.messages), "tools": list(request.tools), "role": request.role,
        "turn_index": request.turn_index, "iteration": request.iteration, "metadata": dict(request.metadata),
    }


def request_from_wire(body: Mapping[str, Any]) -> ModelRequest:
    return ModelRequest(
        messages=body["messages"], tools=body.get("tools") or (), role=body.get("role", "leaf"),
        turn_index=body.get("turn_index", 0), iteration=body.get("iteration", 0), metadata=body.get("metadata") or {},
    )


def response_to_wire(response: ModelResponse) -> dict[str, Any]:
    return {
        "text": response.text,
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls],
        "usage": [response.usage.prompt_tokens, response.usage.completion_tokens],
        "cost_usd": response.cost_usd,
        "model": response.model,
        "truncated": response.truncated,
        # Left off, a child on a worker whose answer the provider's content filter withheld read as a whole one.
        "filtered": response.filtered,
        "reasoning": list(response.reasoning) if response.reasoning is not None else None,
    }


def response_from_wire(body: Mapping[str, Any]) -> ModelResponse:
    return ModelResponse(
        text=body.get("text"),
        tool_calls=tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in body.get("tool_calls") or ()),
        usage=Usage(*body.get("usage") or (0, 0)),
        cost_usd=body.get("cost_usd"),
        model=body.get("model"),
        truncated=bool(body.get("truncated")),
        filtered=bool(body.get("filtered")),  # absent from an older worker's: not filtered, as before
        reasoning=tuple(body["reasoning"]) if body.get("reasoning") else None,
    )
