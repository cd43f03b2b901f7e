"""The model seam: what the agent loop sends to a provider and gets back.

Messages use the OpenAI chat-completions shape (plain dicts with ``role``,
``content``, ``tool_calls``, ``tool_call_id``) because every provider we talk to
speaks it and it keeps transcripts JSON-safe.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agent._frozen import fast_init


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str
    """Raw JSON text as the model produced it; the loop parses it and reports bad JSON to the model."""


@fast_init
@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)


@fast_init
@dataclass(frozen=True, slots=True)
class ModelResponse:
    text: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    cost_usd: float | None = None
    """Cost as reported by the provider; None when it does not report one."""
    model: str | None = None
    truncated: bool = False
    """The answer was cut off at the model's output-length limit (OpenAI's ``finish_reason: length``)."""
    reasoning: tuple[str, str] | None = None
    """(field, text): the reasoning the server sent in a field of its own (DeepSeek's ``reasoning_content``,
    OpenRouter's ``reasoning``), which the assistant message carrying this answer's tool calls sends back:
    DeepSeek's thinking mode refuses such a message without it."""
    filtered: bool = False
    """The provider's content filter withheld the rest of the answer (OpenAI's ``finish_reason: content_filter``
    with part of it written: with none, `agent.ModelError` ``content_filter`` is raised instead)."""


@fast_init
@dataclass(frozen=True, slots=True)
class ModelRequest:
    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]] = ()
    """Tool schemas in the OpenAI ``{"type": "function", "function": {...}}`` shape."""
    role: str = "parent"
    """``parent``, ``leaf`` or ``orchestrator``: lets scripted and demo models act per role."""
    turn_index: int = 0
    """How many turns this session has run before this one (0-based)."""
    iteration: int = 0
    """How many of this turn's own model calls answered before this one (0-based): a call asked again after
    the server refused it as too long keeps its number, and neither a child's calls nor the compactor's
    summaries count. A summary's own request has ``role`` ``compactor`` and iteration 0."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Free-form hints from the caller: the child's goal, the session id."""


@runtime_checkable
class Model(Protocol):
    """A chat model. ``complete`` raises `agent.ModelError` on failure and must be cancellable."""

    name: str
    context_window: int
    supports_vision: bool

    async def complete(self, request: ModelRequest) -> ModelResponse: ...
