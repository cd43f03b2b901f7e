"""OpenTelemetry traces, read back with the SDK's in-memory exporter: a turn and its children are one trace."""

from __future__ import annotations

import asyncio
import io
import logging
import threading
import time

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import Tool
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.config.sections import TelemetrySettings
from gateway.errors import StartupError
from gateway.host import AgentHost
from gateway.logging import setup_logging
from gateway.telemetry import build_tracing, traces_url
from gateway.testing import RecordingAdapter, make_config, settled, start_gateway
from gateway.tracing import FLUSH_SECONDS
from platforms.fakes._waiting import wait_until
from tests.gateway.otlp_collector import FakeCollector

CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
                "gen_ai.tool.call.result")
SECRET_GOAL = "the launch codes are 0000"
DELEGATING = {
    "parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [
        {"goal": SECRET_GOAL}, {"goal": "second task"}]}}]}, {"text": "all done"}]],
    "leaf": lambda request: ({"tool_calls": [{"name": "lookup", "arguments": {"query": "secret query"}}]}
                             if request.iteration == 0 else {"text": "leaf answer"}),
}


def lookup_tool() -> Tool:
    return Tool("lookup", "Look something up.", {"type": "object"}, lambda args, ctx: "secret result",
                toolset="lookup")


@pytest.fixture
def exporter():
    return InMemorySpanExporter()


@pytest.fixture
async def traced(tmp_path, exporter):
    started: list[Gateway] = []

    async def start(script, **sections) -> tuple[Gateway, RecordingAdapter]:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        chat = RecordingAdapter()
        config = make_config(tmp_path / str(len(started)), **sections)
        host = AgentHost(config, model=ScriptedModel(script))
        host.tools.register(lookup_tool())
        gateway = Gateway(host, [chat], tracer_provider=provider)
        await gateway.start()
        started.append(gateway)
        return gateway, chat

    yield start
    for gateway in started:
        await gateway.stop(grace=0)


async def background_exchange(traced) -> RecordingAdapter:
    """One turn delegating one child in the background ("on it"), then the completion turn with its results."""
    script = {"parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "later"}}]},
                          {"text": "on it"}], [{"text": "here are the results"}]],
              "leaf": [[{"text": "found"}]]}
    gateway, chat = await traced(script, delegation={"gateway_mode": "background"})
    await chat.say("do it in the background")
    await settled(gateway)
    return chat


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def parent_of(span: ReadableSpan, spans: tuple[ReadableSpan, ...]) -> ReadableSpan:
    assert span.parent is not None, f"{span.name} has no parent"
    [parent] = [s for s in spans if s.context.span_id == span.parent.span_id]
    return parent


async def test_a_turn_and_every_child_are_one_trace_with_no_content_by_default(traced, exporter) -> None:
    gateway, chat = await traced(DELEGATING, delegation={"gateway_mode": "inline"})
    await chat.say("split this up")
    await settled(gateway)
    assert chat.texts("reply") == ["all done"]
    spans = exporter.get_finished_spans()
    [turn] = by_name(spans, "invoke_agent switchboard")
    assert {s.context.trace_id for s in spans} == {turn.context.trace_id}  # one trace
    session_id = next(iter(gateway.sessions)).session_id
    assert turn.parent is None
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn.attributes["gen_ai.conversation.id"] == session_id
    assert turn.attributes["switchboard.platform"] == "chat"
    assert turn.attributes["switchboard.turn.outcome"] == "done"
    # The turn's tokens are its own two calls and its children's four.
    assert turn.attributes["gen_ai.usage.input_tokens"] == 60 and turn.attributes["gen_ai.usage.output_tokens"] == 30
    # Each child hangs under the delegate_task call that launched it, which hangs under the turn.
    [delegation] = by_name(spans, "execute_tool delegate_task")
    assert parent_of(delegation, spans) is turn
    assert delegation.attributes["gen_ai.tool.name"] == "delegate_task"
    children = by_name(spans, "invoke_agent subagent")
    assert len(children) == 2
    for child in children:
        assert parent_of(child, spans) is delegation
        assert child.attributes["gen_ai.operation.name"] == "invoke_agent"
        assert child.attributes["gen_ai.conversation.id"] == session_id
        assert child.attributes["switchboard.parent.turn_id"] == turn.attributes["switchboard.turn.id"]
        assert child.attributes["switchboard.subagent.status"] == "completed"
    # The children's own tool calls hang under them.
    lookups = by_name(spans, "execute_tool lookup")
    assert sorted(parent_of(s, spans).context.span_id for s in lookups) == sorted(c.context.span_id for c in children)
    # Model calls are chat spans under whichever agent made them, with their tokens; the parent's are named after
    # the model it asks for (`model.name`, the demo's here), the children's after the one that answered.
    chats = by_name(spans, "chat demo") + by_name(spans, "chat scripted")
    assert (len(by_name(spans, "chat demo")), len(chats)) == (2, 2 + 2 * 2)
    assert all(c.attributes["gen_ai.usage.input_tokens"] == 10 for c in chats)
    assert {parent_of(c, spans).name for c in chats} == {"invoke_agent switchboard", "invoke_agent subagent"}
    for span in spans:
        assert not set(CONTENT_KEYS) & set(span.attributes), span.name
        text = str(dict(span.attributes))
        assert SECRET_GOAL not in text and "secret query" not in text and "secret result" not in text


async def test_content_is_recorded_only_with_capture_content(traced, exporter) -> None:
    gateway, chat = await traced(DELEGATING, delegation={"gateway_mode": "inline"},
                                 telemetry={"capture_content": True})
    await chat.say("split this up")
    await settled(gateway)
    spans = exporter.get_finished_spans()
    [turn] = by_name(spans, "invoke_agent switchboard")
    assert "split this up" in turn.attributes["gen_ai.input.messages"]
    assert "all done" in turn.attributes["gen_ai.output.messages"]
    children = by_name(spans, "invoke_agent subagent")
    assert SECRET_GOAL in " ".join(str(s.attributes["gen_ai.input.messages"]) for s in children)
    assert all("leaf answer" in s.attributes["gen_ai.output.messages"] for s in children)
    [delegation] = by_name(spans, "execute_tool delegate_task")
    assert SECRET_GOAL in delegation.attributes["gen_ai.tool.call.arguments"]
    lookup = by_name(spans, "execute_tool lookup")[0]
    assert "secret query" in lookup.attributes["gen_ai.tool.call.arguments"]
    assert lookup.attributes["gen_ai.tool.call.result"] == "secret result"


async def test_a_background_completion_joins_the_trace_of_the_turn_that_delegated(traced, exporter) -> None:
    chat = await background_exchange(traced)
    assert chat.texts() == ["on it", "here are the results"]
    spans = exporter.get_finished_spans()
    first, completion = sorted(by_name(spans, "invoke_agent switchboard"), key=lambda s: s.start_time)
    [child] = by_name(spans, "invoke_agent subagent")
    assert completion.attributes["switchboard.turn.kind"] == "completion"
    assert completion.context.trace_id == first.context.trace_id == child.context.trace_id
    assert completion.parent.span_id == first.context.span_id


async def test_a_stopped_child_ends_its_span_interrupted(traced, exporter) -> None:
    script = {"parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "forever"}}]},
                          {"text": "stopped"}]],
              "leaf": [[{"wait": "never"}]]}
    gateway, chat = await traced(script, delegation={"gateway_mode": "inline"})
    await chat.say("go")
    await gateway.host.model.reached("never")  # the child runs: nothing the chat would show
    view = gateway.host.children
    [child] = view.children(next(iter(gateway.sessions)).session_id)
    assert await view.interrupt_child(child.subagent_id, "stopped from the operator console")
    await settled(gateway)
    [span] = by_name(exporter.get_finished_spans(), "invoke_agent subagent")
    assert span.attributes["switchboard.subagent.status"] == "interrupted"


async def test_a_turn_that_new_stops_ends_its_span(traced, exporter) -> None:
    # /new gives the chat's session a new id before the turn it stops has ended: the turn's span, kept
    # under the old id, was never ended, nor let go of while the process lived.
    script = {"parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "forever"}}]},
                          {"text": "never sent"}]],
              "leaf": [[{"wait": "never"}]]}
    gateway, chat = await traced(script, delegation={"gateway_mode": "inline"})
    await chat.say("go")
    await gateway.host.model.reached("never")
    old = next(iter(gateway.sessions)).session_id
    await chat.say("/new")
    await settled(gateway)
    assert next(iter(gateway.sessions)).session_id != old
    spans = exporter.get_finished_spans()
    [turn] = by_name(spans, "invoke_agent switchboard")
    assert (turn.attributes["gen_ai.conversation.id"], turn.attributes["switchboard.turn.outcome"]) == (old, "stopped")
    [child] = by_name(spans, "invoke_agent subagent")
    assert parent_of(parent_of(child, spans), spans) is turn
    assert not gateway.tracing._turns


async def test_a_turns_tokens_include_its_children_failed_and_stopped_ones_too(traced, exporter) -> None:
    def leaf(request):
        goal = next(m["content"] for m in request.messages if m["role"] == "user")
        if request.iteration == 0:
            return {"tool_calls": [{"name": "lookup", "arguments": {}}]}
        if "doomed" in goal:
            return {"error": "quota", "message": "out of credit"}
        return {"wait": "never"} if "forever" in goal else {"text": "found"}

    script = {"parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [
        {"goal": "fine"}, {"goal": "doomed"}, {"goal": "forever"}]}}]}, {"text": "all done"}]], "leaf": leaf}
    gateway, chat = await traced(script, delegation={"gateway_mode": "inline"})
    await chat.say("go")
    await gateway.host.model.reached("never")
    view = gateway.host.children
    [stuck] = [c for c in view.children(next(iter(gateway.sessions)).session_id) if c.goal == "forever"]
    assert await view.interrupt_child(stuck.subagent_id, "stopped from the operator console")
    await settled(gateway)
    spans = exporter.get_finished_spans()
    assert sorted(s.attributes["switchboard.subagent.status"] for s in by_name(spans, "invoke_agent subagent")) == [
        "completed", "failed", "interrupted"]
    [turn] = by_name(spans, "invoke_agent switchboard")
    # Its own 2 calls; fine's 2; doomed's 1 answered (the refused one used nothing); forever's 1 answered.
    assert turn.attributes["gen_ai.usage.input_tokens"] == 10 * 6
    assert turn.attributes["gen_ai.usage.output_tokens"] == 5 * 6


async def test_a_turns_tokens_include_an_orchestrators_own_children_once(traced, exporter) -> None:
    script = {"parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {
                  "goal": "split it", "role": "orchestrator"}}]}, {"text": "all done"}]],
              "orchestrator": [[{"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "a part"}}]},
                                {"text": "parts done"}]],
              "leaf": [[{"text": "part"}]]}
    gateway, chat = await traced(script, delegation={"gateway_mode": "inline", "max_spawn_depth": 2})
    await chat.say("go")
    await settled(gateway)
    spans = exporter.get_finished_spans()
    assert len(by_name(spans, "invoke_agent subagent")) == 2
    [turn] = by_name(spans, "invoke_agent switchboard")
    assert turn.attributes["gen_ai.usage.input_tokens"] == 10 * (2 + 2 + 1)  # parent, orchestrator, its leaf


async def test_a_background_childs_tokens_count_in_one_turn_of_its_exchange(traced, exporter) -> None:
    await background_exchange(traced)
    turns = by_name(exporter.get_finished_spans(), "invoke_agent switchboard")
    # 3 parent calls and the child's 1, each in exactly one of the two turns.
    assert sum(t.attributes["gen_ai.usage.input_tokens"] for t in turns) == 4 * 10


async def test_no_endpoint_means_no_traces_and_the_traces_path_is_added_only_when_missing() -> None:
    assert build_tracing(TelemetrySettings()) is None
    assert traces_url("http://127.0.0.1:4318") == "http://127.0.0.1:4318/v1/traces"
    assert traces_url("http://127.0.0.1:4318/") == "http://127.0.0.1:4318/v1/traces"
    assert traces_url("https://otel.example.com/custom/path") == "https://otel.example.com/custom/path"
    tracing = build_tracing(TelemetrySettings(otlp_endpoint="http://127.0.0.1:4318"))
    assert tracing is not None and tracing.capture_content is False
    await tracing.close()  # nothing was traced: nothing is sent


def test_an_endpoint_without_the_packages_is_one_clear_line(monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    with pytest.raises(StartupError, match=r"pip install '\.\[telemetry\]' in the checkout"):
        build_tracing(TelemetrySettings(otlp_endpoint="http://127.0.0.1:4318"))


async def test_each_background_child_hangs_under_the_delegate_task_call_that_launched_it(traced, exporter) -> None:
    calls = [{"name": "delegate_task", "arguments": {"goal": "first goal"}},
             {"name": "delegate_task", "arguments": {"goal": "second goal"}}]
    script = {"parent": lambda request: ({"tool_calls": calls} if request.iteration == 0 and request.turn_index == 0
                                         else {"text": "ok"}),
              "leaf": lambda request: {"text": "found"}}
    gateway, chat = await traced(script, delegation={"gateway_mode": "background"},
                                 telemetry={"capture_content": True})
    await chat.say("two things in the background")
    await settled(gateway)
    spans = exporter.get_finished_spans()
    children = by_name(spans, "invoke_agent subagent")
    assert len(children) == 2
    for child in children:
        launcher = parent_of(child, spans)
        assert launcher.name == "execute_tool delegate_task"
        goal = "first goal" if "first goal" in child.attributes["gen_ai.input.messages"] else "second goal"
        assert goal in launcher.attributes["gen_ai.tool.call.arguments"]


@pytest.fixture
def export_threads_end():
    """Every export thread a collector test started has ended when it does: one left retrying into
    later tests draws its backoff's jitter from `random`, which Hypothesis, in a property running
    meanwhile, takes for a strategy that depends on outside state, failing a correct test."""
    yield
    deadline = time.monotonic() + 15
    for thread in threading.enumerate():
        if thread.name.startswith(("OtelBatch", "switchboard-trace-flush")):
            thread.join(max(0.0, deadline - time.monotonic()))
            assert not thread.is_alive(), f"{thread.name} still exporting"


@pytest.mark.usefixtures("export_threads_end")
async def test_a_collector_that_is_down_is_one_warning_and_its_return_one_line(tmp_path, monkeypatch) -> None:
    # The exporter logs each failed attempt with its own retry delay in the text, so the repeat
    # filter cannot fold them: a collector down for a day was thousands of lines, and they pushed
    # everything else out of the console's recent warnings.
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")  # milliseconds: each turn's spans go at once
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "3")  # seconds an export may retry
    root = logging.getLogger()
    level, stream = root.level, io.StringIO()
    handler = setup_logging("INFO", stream=stream)
    try:
        async with FakeCollector() as collector:
            chat = RecordingAdapter()
            config = make_config(tmp_path, telemetry={"otlp_endpoint": collector.url})
            gateway = await start_gateway(config, [chat], script={"parent": lambda request: {"text": "ok"}})
            try:
                collector.down = True
                for n in (1, 2):
                    await chat.say(f"message {n}", chat=f"c{n}")
                    await wait_until(lambda: collector.refused >= 2 * n, timeout=10)
                collector.down = False
                await chat.say("and another")
                await wait_until(lambda: collector.accepted, timeout=10)
                assert chat.texts() == ["ok"] * 3  # the turns never waited for the collector
            finally:
                await gateway.stop(grace=0)
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    lines = [line for line in stream.getvalue().splitlines() if "trace" in line.lower()]
    [down, back] = lines
    assert "WARNING gateway.telemetry: traces could not be sent to " + collector.url in down
    assert "503" in down or "Service Unavailable" in down
    assert "INFO gateway.telemetry: traces reach " + collector.url + " again" in back


@pytest.mark.usefixtures("export_threads_end")
async def test_a_collector_that_does_not_answer_holds_the_stop_only_briefly(tmp_path, monkeypatch) -> None:
    # The last spans are sent when the gateway stops; a collector that takes the connection and
    # never answers held the stop for the exporter's whole timeout and retries (10 to 30 s), past a
    # container's stop grace, which then killed the process before it closed its database.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "5")  # past FLUSH_SECONDS, and retries end soon after
    async with FakeCollector() as collector:
        collector.hangs = True
        chat = RecordingAdapter()
        config = make_config(tmp_path, telemetry={"otlp_endpoint": collector.url})
        gateway = await start_gateway(config, [chat], script={"parent": [[{"text": "ok"}]]})
        await chat.say("hello")
        await settled(gateway)
        loop = asyncio.get_running_loop()
        began = loop.time()
        await gateway.stop(grace=0)
        assert collector.hanging == 1  # the stop did try to send them
        assert loop.time() - began < FLUSH_SECONDS + 2
        assert gateway.store.db.closed
