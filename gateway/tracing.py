"""OpenTelemetry traces of turns and their children, after the GenAI semantic conventions.

One trace per chat turn:

- ``invoke_agent switchboard`` (INTERNAL): the parent turn, from the turn runner's events,
  with ``gen_ai.conversation.id`` (the session generation's agent session id), the platform,
  the outcome and the turn's token usage. A completion turn (background results) joins the
  trace of the turn that delegated.
- ``execute_tool {name}`` (INTERNAL): every tool call of the parent and of every child,
  from the agent's ``tool_start`` / ``tool_end`` hooks. A call an interrupt or a cancellation
  cut short ends with its agent, which says how (`_end_cut`): ``switchboard.ended_by``.
- ``invoke_agent subagent`` (INTERNAL): every child, from the ``subagent_start`` /
  ``subagent_stop`` hooks, a child of the ``execute_tool delegate_task`` span that launched
  it (of the parent turn's span when another tool launched it), so an orchestrator's own
  children nest under it.
- ``chat {model}`` (CLIENT): every model call, from the ``model_call`` hook, with its tokens.

The lifecycle knows nothing of this: spans are found by the ids the hooks carry (session,
turn, subagent). Prompts, replies, goals, summaries, tool arguments and tool results are
recorded (``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``) only with
``capture_content``, masked and cut as a log line is (`captured`). Importing this module
needs the OpenTelemetry API; `gateway.telemetry` builds it from the configuration only when
traces are wanted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections import OrderedDict
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from agent import HookRegistry, TurnResult
from gateway.events import GatewayListener
from gateway.logging import redacted_bounded
from gateway.metrics import MAX_MODEL_NAME, MAX_MODELS
from platforms.messages import scalar_text

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from gateway.sessions import GatewaySession, RunningTurn, WorkItem

log = logging.getLogger("gateway.telemetry")

DELEGATE = "delegate_task"
REMEMBERED = 4096
"""Span contexts kept after their span ended, for children and completion turns that come later."""
_FAILED_CHILD = frozenset({"failed", "error", "timeout"})
_CUT_SHORT = frozenset({"[cancelled: the turn was interrupted]", "[not run: the turn was interrupted]"})
"""The results of a call an interrupt cut short (docs/agent.md, interrupts and steering): ``ok`` false, though its
tool did not fail. Which interrupt it was (a /stop, a liveness timeout, the shutdown), only its agent's end tells."""
FLUSH_SECONDS = 2.0
"""How long a stop waits for the collector to take the last spans."""


class Tracing(GatewayListener):
    """Subscribe it to the gateway's events and register its `hooks`; `close` on the way out.

    ``provider`` is an OpenTelemetry ``TracerProvider``; with ``owns_provider`` it is shut
    down (its spans flushed) by `close`. ``origin_of(delegation_id)`` names the turn that
    dispatched a background delegation, so its completion turn joins that turn's trace.
    """

    def __init__(self, provider: trace.TracerProvider, *, capture_content: bool = False,
                 provider_name: str | None = None, request_model: str | None = None,
                 origin_of: Callable[[str], str | None] = lambda _: None, owns_provider: bool = False) -> None:
        self._provider = provider
        self._owns = owns_provider
        self._tracer = provider.get_tracer("switchboard")
        self.capture_content = capture_content
        self._provider_name = provider_name
        self._request_model = request_model
        self._origin_of = origin_of
        self._turns: dict[tuple[str, str], Span] = {}
        """Open parent turns by (agent session id, turn id)."""
        self._agents: dict[str, Span] = {}
        """Open children by subagent id (also their agent session id)."""
        self._tools: dict[tuple[str, str, str], Span] = {}
        """Open tool calls by (session id, turn id, call id)."""
        self._cut: dict[tuple[str, str, str], int] = {}
        """Tool calls of `_tools` an interrupt cut short, with the time (ns) their ``tool_end`` came: their spans
        end with their agent's, which says how."""
        self._conversations: dict[str, str] = {}
        """The conversation of each open child: its root session's id."""
        self._ended_turns: OrderedDict[str, trace.SpanContext] = OrderedDict()
        self._launchers: OrderedDict[tuple[str, str], trace.SpanContext] = OrderedDict()
        """The latest delegate_task span of each (session, turn): what its children hang under
        when they start outside the launching call's context (an engine's own task)."""
        self._span_models: set[str] = set()
        """The model names `chat` spans are named after (`_chat_name`)."""
        self._launcher: ContextVar[trace.SpanContext | None] = ContextVar(f"launcher-{id(self)}")
        """The delegate_task span of the tool call running in this context (None for another
        tool). Set by the tool_start hook, which runs in the turn's own context, so a child task
        created by that call inherits it: a background call that returns at once may see its
        children start only after the turn's next delegate_task has begun."""

    def hooks(self, hooks: HookRegistry) -> None:
        hooks.register("subagent_start", self._child_started)
        hooks.register("subagent_stop", self._child_stopped)
        hooks.register("tool_start", self._tool_started)
        hooks.register("tool_end", self._tool_ended)
        hooks.register("model_call", self._model_called)

    async def close(self) -> None:
        """End every span still open (the process is stopping) and, if owned, flush and shut the
        provider down, waiting at most `FLUSH_SECONDS` for it: a collector that does not answer
        would hold the stop for the exporter's timeout and retries, past a supervisor's patience.
        The flush goes on in a daemon thread, which the process's exit does not wait for."""
        self._end_cut(list(self._tools), "shutdown")
        for span in [*self._agents.values(), *self._turns.values()]:
            span.set_attribute("switchboard.ended_by", "shutdown")
            span.end()
        self._agents.clear()
        self._turns.clear()
        if not self._owns:
            return
        loop = asyncio.get_running_loop()
        flushed = loop.create_future()

        def shut_down() -> None:
            try:
                self._provider.shutdown()  # type: ignore[attr-defined]
            finally:
                with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
                    loop.call_soon_threadsafe(lambda: flushed.done() or flushed.set_result(None))

        threading.Thread(target=shut_down, name="switchboard-trace-flush", daemon=True).start()
        try:
            await asyncio.wait_for(flushed, FLUSH_SECONDS)
        except TimeoutError:
            log.warning("traces: the collector did not take the last spans within %.0f s; stopping without them",
                        FLUSH_SECONDS)

    # -- parent turns (gateway events) ----------------------------------------------------------

    def turn_started(self, session: GatewaySession, item: WorkItem, running: RunningTurn) -> None:
        parent = None
        if item.delegation_id is not None:
            origin = self._origin_of(item.delegation_id)
            parent = self._ended_turns.get(origin) if origin else None
        attributes = self._agent_attributes("switchboard", session.session_id, session.session_id)
        if self._request_model:
            attributes["gen_ai.request.model"] = self._request_model
        attributes.update({"switchboard.platform": session.platform, "switchboard.turn.id": item.turn_id,
                           "switchboard.turn.kind": item.kind, "switchboard.delegation.mode": session.mode})
        if self.capture_content:
            attributes["gen_ai.input.messages"] = _messages("user", item.text)
        context = trace.set_span_in_context(trace.NonRecordingSpan(parent)) if parent is not None else None
        span = self._tracer.start_span("invoke_agent switchboard", context=context, kind=SpanKind.INTERNAL,
                                       attributes=attributes)
        self._turns[(session.session_id, item.turn_id)] = span

    def turn_ended(self, session: GatewaySession, item: WorkItem, running: RunningTurn, result: TurnResult | None,
                   outcome: str, seconds: float) -> None:
        key = (session.session_id, item.turn_id)
        span = self._turns.pop(key, None)
        if span is None:
            # `/new` gave the session a new id while the turn ran (it ends after): its span is under the
            # old one, and would stay open, and here, for the life of the process.
            key = next((k for k in self._turns if k[1] == item.turn_id), key)
            span = self._turns.pop(key, None)
        if span is None:
            return
        self._end_cut([k for k in self._tools if k[:2] == key], "shutdown" if outcome == "shutdown" else "interrupted")
        span.set_attribute("switchboard.turn.outcome", outcome)
        if result is not None:
            span.set_attribute("gen_ai.usage.input_tokens", result.usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", result.usage.completion_tokens)
            if result.model:
                span.set_attribute("gen_ai.response.model", scalar_text(result.model))
            span.set_attribute("gen_ai.response.finish_reasons", [result.exit_reason])
            if self.capture_content and result.text:
                span.set_attribute("gen_ai.output.messages", _messages("assistant", result.text, result.exit_reason))
        if outcome == "failed":
            kind = "crash" if result is None else result.exit_reason
            span.set_attribute("error.type", kind)
            span.set_status(Status(StatusCode.ERROR, kind))
        self._remember(self._ended_turns, item.turn_id, span.get_span_context())
        span.end()

    # -- children (lifecycle hooks) -------------------------------------------------------------

    async def _child_started(self, *, parent_session_id: str, parent_turn_id: str, child_subagent_id: str,
                             child_role: str, child_goal: str, **_: Any) -> None:
        self._start_child(parent_session_id, parent_turn_id, child_subagent_id, child_role, child_goal)

    def _start_child(self, parent_sid: str, parent_turn: str, sid: str, role: str, goal: str | None,
                     start_time: int | None = None) -> Span:
        conversation = self._conversations.get(parent_sid, parent_sid)
        self._conversations[sid] = conversation
        attributes = self._agent_attributes("subagent", sid, conversation)
        attributes.update({"switchboard.subagent.role": role, "switchboard.parent.session_id": parent_sid,
                           "switchboard.parent.turn_id": parent_turn})
        if self.capture_content and goal:
            attributes["gen_ai.input.messages"] = _messages("user", goal)
        try:
            parent = self._launcher.get()
        except LookupError:
            parent = self._launchers.get((parent_sid, parent_turn))
        context = (trace.set_span_in_context(trace.NonRecordingSpan(parent)) if parent is not None
                   else self._context_of(parent_sid, parent_turn))
        span = self._tracer.start_span("invoke_agent subagent", context=context, kind=SpanKind.INTERNAL,
                                       attributes=attributes, start_time=start_time)
        self._agents[sid] = span
        return span

    async def _child_stopped(self, *, parent_session_id: str, parent_turn_id: str, child_session_id: str,
                             child_role: str, child_summary: str | None, child_status: str, child_exit_reason: str,
                             duration_ms: int, child_model: str | None = None,
                             child_usage: Mapping[str, Any] | None = None, **_: Any) -> None:
        span = self._agents.pop(child_session_id, None)
        if span is None:  # stopped before it started: still one span, as long as it lasted
            start = time.time_ns() - duration_ms * 1_000_000
            span = self._start_child(parent_session_id, parent_turn_id, child_session_id, child_role, None, start)
            self._agents.pop(child_session_id, None)
        self._conversations.pop(child_session_id, None)
        # What cut its calls short: its stop or its liveness monitor's (or the gateway's stop, which the hook
        # does not tell from its own).
        self._end_cut([k for k in self._tools if k[0] == child_session_id],
                      "timeout" if child_status == "timeout" else "interrupted")
        span.set_attribute("switchboard.subagent.status", child_status)
        if child_model:
            # Not the parent's model: delegation.model or a route may name another. The name a call answered
            # as once one did, else the one it was launched with.
            answered = bool(child_usage and child_usage.get("api_calls"))
            span.set_attribute("gen_ai.response.model" if answered else "gen_ai.request.model",
                               scalar_text(child_model))
        span.set_attribute("gen_ai.response.finish_reasons", [child_exit_reason])
        if self.capture_content and child_summary:
            span.set_attribute("gen_ai.output.messages", _messages("assistant", child_summary, child_exit_reason))
        if child_status in _FAILED_CHILD:
            span.set_attribute("error.type", child_status)
            span.set_status(Status(StatusCode.ERROR, child_status))
        span.end()

    # -- tools and model calls (agent hooks) ----------------------------------------------------

    async def _tool_started(self, *, session_id: str, turn_id: str, tool_name: str, call_id: str,
                            arguments: Any, **_: Any) -> None:
        attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool_name,
                                      "gen_ai.tool.call.id": call_id, "gen_ai.tool.type": "function",
                                      "gen_ai.conversation.id": self._conversations.get(session_id, session_id)}
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = captured(_json(arguments))
        span = self._tracer.start_span(f"execute_tool {tool_name}", context=self._context_of(session_id, turn_id),
                                       kind=SpanKind.INTERNAL, attributes=attributes)
        self._tools[(session_id, turn_id, call_id)] = span
        self._launcher.set(span.get_span_context() if tool_name == DELEGATE else None)
        if tool_name == DELEGATE:
            self._remember(self._launchers, (session_id, turn_id), span.get_span_context())

    async def _tool_ended(self, *, session_id: str, turn_id: str, call_id: str, ok: bool, output: str,
                          **_: Any) -> None:
        key = (session_id, turn_id, call_id)
        span = self._tools.get(key)
        if span is None:
            return
        if self.capture_content:
            span.set_attribute("gen_ai.tool.call.result", captured(output))
        if not ok and output in _CUT_SHORT:
            if (session_id, turn_id) in self._turns or session_id in self._agents:
                self._cut[key] = time.time_ns()  # its agent's end says what cut it (`_end_cut`)
            else:  # no span of ours ends that agent: held, it would wait for the process's stop
                self._end_cut([key], "interrupted")
            return
        del self._tools[key]
        if not ok:
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR, "tool_error"))
        span.end()

    async def _model_called(self, *, session_id: str, turn_id: str, role: str, model: str | None, prompt_tokens: int,
                            completion_tokens: int, duration_seconds: float, error: str | None, **_: Any) -> None:
        end = time.time_ns()
        # As the reply named it: a lone surrogate there (JSON's "\\ud83d") failed the OTLP export of the whole batch.
        model = scalar_text(model) if model else model
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat",
                                      "gen_ai.conversation.id": self._conversations.get(session_id, session_id),
                                      "gen_ai.usage.input_tokens": prompt_tokens,
                                      "gen_ai.usage.output_tokens": completion_tokens}
        # ``model`` is the name the reply gave (a dated version, a router's pick), or the called model's own
        # when the call failed: only the parent's configured model is known to be the one asked for.
        if model:
            attributes["gen_ai.response.model" if error is None else "gen_ai.request.model"] = model
        if role == "parent" and self._request_model:
            attributes["gen_ai.request.model"] = self._request_model
        if self._provider_name:
            attributes["gen_ai.provider.name"] = self._provider_name
        span = self._tracer.start_span(self._chat_name(role, model), context=self._context_of(session_id, turn_id),
                                       kind=SpanKind.CLIENT, attributes=attributes,
                                       start_time=end - max(0, int(duration_seconds * 1e9)))
        if error is not None:
            span.set_attribute("error.type", error)
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=end)

    # -- helpers --------------------------------------------------------------------------------

    def _chat_name(self, role: str, model: str | None) -> str:
        """``chat {gen_ai.request.model}``, as the GenAI conventions name it: the parent's configured model; else
        the name the call gave, among the first `MAX_MODELS` (``chat`` alone past them). Named after each reply's
        model, a router or a provider naming a new one in each reply added span names without end, and with
        them the series of every span-metrics pipeline (an OpenTelemetry Collector's ``spanmetrics``)."""
        if role == "parent" and self._request_model:
            model = self._request_model
        if not model or len(model) > MAX_MODEL_NAME:
            return "chat"
        if model not in self._span_models:
            if len(self._span_models) >= MAX_MODELS:
                return "chat"
            self._span_models.add(model)
        return f"chat {model}"

    def _end_cut(self, keys: list[tuple[str, str, str]], ended_by: str) -> None:
        """End the spans of the tool calls ``keys``, which their agent's end cut short: an interrupt answered them
        (`_CUT_SHORT`), or a cancellation ended them with no ``tool_end`` at all. ``ended_by`` says what did:
        ``interrupted`` (a /stop, a new message, the child's own stop), ``timeout`` (the liveness monitor: an error,
        as the child's span is) or ``shutdown``. Ended as they were, they read as calls that succeeded, and one
        interrupted as one whose tool failed."""
        for key in keys:
            span = self._tools.pop(key)
            span.set_attribute("switchboard.ended_by", ended_by)
            if ended_by == "timeout":
                span.set_attribute("error.type", "timeout")
                span.set_status(Status(StatusCode.ERROR, "timeout"))
            span.end(end_time=self._cut.pop(key, None))

    def _context_of(self, session_id: str, turn_id: str) -> Any:
        """The context whose span a call in (session, turn) hangs under: the parent turn, else the child."""
        span = self._turns.get((session_id, turn_id)) or self._agents.get(session_id)
        return trace.set_span_in_context(span) if span is not None else None

    def _agent_attributes(self, name: str, agent_id: str, conversation: str) -> dict[str, Any]:
        attributes: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name,
                                      "gen_ai.agent.id": agent_id, "gen_ai.conversation.id": conversation}
        if self._provider_name:
            attributes["gen_ai.provider.name"] = self._provider_name
        return attributes

    @staticmethod
    def _remember(store: OrderedDict, key: Any, value: trace.SpanContext) -> None:
        store[key] = value
        store.move_to_end(key)
        while len(store) > REMEMBERED:
            store.popitem(last=False)


def captured(text: str) -> str:
    """Content as a span records it: masked as a log line is (`gateway.logging.redact`), then cut as
    one is (`gateway.logging.bounded`). A user pasting an API key, a tool reading a file of tokens,
    or the bot's own token echoed in an error would otherwise reach the collector, and whoever reads
    traces, in clear; and one tool result of megabytes made the OTLP request of the whole batch of
    spans around it too large for the collector, which refused them all. Only what is kept is masked
    (`gateway.logging.redacted_bounded`): masking all of a result of megabytes held every chat a second."""
    return redacted_bounded(text)


def _messages(role: str, text: str, finish_reason: str | None = None) -> str:
    message: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": captured(text)}]}
    if finish_reason is not None:
        message["finish_reason"] = finish_reason
    return json.dumps([message], ensure_ascii=False)


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)
