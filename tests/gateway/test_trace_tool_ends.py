"""How a tool call's span ends when its call is cut short: by a stop, a liveness timeout, the shutdown.

Read back with the SDK's in-memory exporter over real gateway turns. Before, such a span ended as a call
whose tool failed (``tool_error``), or, when a cancellation ended the call with no ``tool_end`` at all, as
one that succeeded."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agent import AgentSession, Clock, Tool, ToolError
from agent.models.scripted import ScriptedModel
from agent.testing.clock import FakeClock
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.fakes._waiting import wait_until

HANG = {"tool_calls": [{"name": "hang", "arguments": {}}]}
DELEGATE = {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "look it up"}}]}


class Tools:
    """``hang``: waits until cancelled; ``broken``: fails."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()

    async def hang(self, args, ctx) -> str:
        self.entered.set()
        await asyncio.Event().wait()
        return "never"

    async def broken(self, args, ctx) -> str:
        raise ToolError("the lookup service refused")


@pytest.fixture
def exporter():
    return InMemorySpanExporter()


@pytest.fixture
async def traced(tmp_path, exporter):
    started: list[Gateway] = []

    async def start(script, *, clock: Clock | None = None, **sections) -> tuple[Gateway, RecordingAdapter, Tools]:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        chat, tools = RecordingAdapter(), Tools()
        host = AgentHost(make_config(tmp_path, **sections), model=ScriptedModel(script),
                         **({} if clock is None else {"clock": clock}))
        for name in ("hang", "broken"):
            host.tools.register(Tool(name, f"The {name} tool.", {"type": "object"}, getattr(tools, name),
                                     toolset="lookup"))
        gateway = Gateway(host, [chat], tracer_provider=provider, **({} if clock is None else {"clock": clock}))
        await gateway.start()
        started.append(gateway)
        return gateway, chat, tools

    yield start
    for gateway in started:
        await gateway.stop(grace=0)


def the_span(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    [span] = [s for s in exporter.get_finished_spans() if s.name == name]
    return span


def assert_cut(span: ReadableSpan, ended_by: str) -> None:
    assert span.attributes.get("switchboard.ended_by") == ended_by, dict(span.attributes)
    if ended_by == "timeout":
        assert (span.status.status_code, span.status.description) == (StatusCode.ERROR, "timeout")
        assert span.attributes["error.type"] == "timeout"
    else:
        assert span.status.status_code is StatusCode.UNSET  # a stop is no failure of the tool
        assert "error.type" not in span.attributes


async def test_a_tool_call_stop_cuts_short_ends_interrupted_and_a_failing_one_as_an_error(traced, exporter) -> None:
    calls = {"tool_calls": [{"name": "broken", "arguments": {}}]}
    gateway, chat, tools = await traced({"parent": [[calls, HANG, {"text": "never sent"}]]})
    await chat.say("look it up")
    await tools.entered.wait()
    await chat.say("/stop")
    await settled(gateway)
    cut = the_span(exporter, "execute_tool hang")
    assert_cut(cut, "interrupted")
    turn = the_span(exporter, "invoke_agent switchboard")
    assert turn.attributes["switchboard.turn.outcome"] == "stopped"
    assert cut.end_time <= turn.end_time
    failed = the_span(exporter, "execute_tool broken")
    assert (failed.status.status_code, failed.status.description) == (StatusCode.ERROR, "tool_error")
    assert "switchboard.ended_by" not in failed.attributes


async def test_a_tool_call_a_stop_leaves_not_run_after_its_tool_start_ends_interrupted(traced, exporter) -> None:
    # The stop lands while the tool_start hooks run: the call is answered "[not run: …]", its tool never ran.
    gateway, chat, tools = await traced({"parent": [[HANG, {"text": "never sent"}]]})
    in_hook, go_on = asyncio.Event(), asyncio.Event()

    async def slow_hook(**_) -> None:
        in_hook.set()
        await go_on.wait()

    gateway.host.hooks.register("tool_start", slow_hook)
    await chat.say("look it up")
    await in_hook.wait()
    await chat.say("/stop")
    go_on.set()
    await settled(gateway)
    assert not tools.entered.is_set()
    assert_cut(the_span(exporter, "execute_tool hang"), "interrupted")


async def test_a_subagents_tool_call_its_stop_cuts_short_ends_interrupted(traced, exporter) -> None:
    script = {"parent": [[DELEGATE, {"text": "stopped"}]], "leaf": [[HANG, {"text": "never"}]]}
    gateway, chat, tools = await traced(script, delegation={"gateway_mode": "inline"})
    await chat.say("go")
    await tools.entered.wait()
    view = gateway.host.children
    [child] = view.children(next(iter(gateway.sessions)).session_id)
    assert await view.interrupt_child(child.subagent_id, "stopped from the operator console")
    await settled(gateway)
    assert_cut(the_span(exporter, "execute_tool hang"), "interrupted")
    assert the_span(exporter, "invoke_agent subagent").attributes["switchboard.subagent.status"] == "interrupted"
    assert "switchboard.ended_by" not in the_span(exporter, "execute_tool delegate_task").attributes


async def test_a_subagents_tool_call_its_liveness_timeout_cuts_short_ends_timeout(traced, exporter) -> None:
    clock = FakeClock(autojump=False)
    script = {"parent": [[DELEGATE, {"text": "it timed out"}]], "leaf": [[HANG, {"text": "never"}]]}
    gateway, chat, tools = await traced(script, clock=clock, delegation={
        "gateway_mode": "inline", "stale_in_tool_seconds": 60, "heartbeat_interval_seconds": 5})
    await chat.say("go")
    await tools.entered.wait()

    def child_ended() -> bool:
        clock.advance(5)  # a heartbeat of the liveness monitor at each look
        return any(s.name == "invoke_agent subagent" for s in exporter.get_finished_spans())

    await wait_until(child_ended, timeout=5, poll=0.001)
    await wait_until(lambda: chat.texts("reply"), timeout=5)
    assert the_span(exporter, "invoke_agent subagent").attributes["switchboard.subagent.status"] == "timeout"
    assert_cut(the_span(exporter, "execute_tool hang"), "timeout")


async def test_a_tool_call_the_shutdown_cuts_short_ends_shutdown(traced, exporter) -> None:
    gateway, chat, tools = await traced({"parent": [[HANG, {"text": "never sent"}]]})
    await chat.say("look it up")
    await tools.entered.wait()
    await gateway.stop(grace=0)
    assert_cut(the_span(exporter, "execute_tool hang"), "shutdown")
    assert the_span(exporter, "invoke_agent switchboard").attributes["switchboard.turn.outcome"] == "shutdown"


async def test_a_tool_call_cut_short_in_a_session_of_no_turn_or_subagent_ends_at_once(traced, exporter) -> None:
    # A plugin's own session on the host's hooks: no span of ours ends it, so its cut call is not held for it.
    gateway, _, tools = await traced({"parent": [[{"text": "unused"}]]})
    session = AgentSession(model=ScriptedModel({"parent": [[HANG, {"text": "never"}]]}),
                           tools={"hang": gateway.host.tools.get("hang")}, hooks=gateway.host.hooks)
    turn = asyncio.ensure_future(session.run_turn("look it up"))
    await tools.entered.wait()
    session.interrupt("the plugin gave up", hard=True)
    assert (await turn).exit_reason == "interrupted"
    assert_cut(the_span(exporter, "execute_tool hang"), "interrupted")
    assert not gateway.tracing._tools
