"""What spans carry: captured content masked and cut as the log is, and no tool span left open by a
child whose tool call was cancelled outright. Driven through the agent's hook registry, read back
with the SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import HookRegistry
from gateway.logging import MAX_TEXT_CHARS, register_secret
from gateway.tracing import Tracing

BOT_TOKEN = "tr4ce-content-registered-secret-9f2c"
API_KEY = "sk-" + "A1b2C3d4" * 4


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def traced(exporter) -> Iterator[tuple[Tracing, HookRegistry]]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = Tracing(provider, capture_content=True)
    hooks = HookRegistry()
    tracing.hooks(hooks)
    yield tracing, hooks
    provider.shutdown()


async def start_child(hooks: HookRegistry, sid: str, goal: str) -> None:
    await hooks.run("subagent_start", parent_session_id="parent", parent_turn_id="t1", child_subagent_id=sid,
                    child_role="leaf", child_goal=goal)


async def stop_child(hooks: HookRegistry, sid: str, summary: str | None, status: str = "completed") -> None:
    await hooks.run("subagent_stop", parent_session_id="parent", parent_turn_id="t1", child_session_id=sid,
                    child_role="leaf", child_summary=summary, child_status=status, child_exit_reason=status,
                    duration_ms=5)


async def test_captured_content_is_masked_as_the_log_is(traced, exporter) -> None:
    tracing, hooks = traced
    register_secret(BOT_TOKEN)
    await start_child(hooks, "c1", f"use the key {API_KEY}")
    await hooks.run("tool_start", session_id="c1", turn_id="ct", tool_name="fetch", call_id="k1",
                    arguments={"header": f"Bearer {BOT_TOKEN}"})
    await hooks.run("tool_end", session_id="c1", turn_id="ct", call_id="k1", ok=True,
                    output=f"config: token={BOT_TOKEN} key={API_KEY}")
    await stop_child(hooks, "c1", f"done with {API_KEY}")
    spans = exporter.get_finished_spans()
    assert {s.name for s in spans} == {"invoke_agent subagent", "execute_tool fetch"}
    everything = " ".join(str(value) for span in spans for value in span.attributes.values())
    assert BOT_TOKEN not in everything and API_KEY not in everything
    [tool] = [s for s in spans if s.name == "execute_tool fetch"]
    assert tool.attributes["gen_ai.tool.call.result"] == "config: token=*** key=***"
    assert "***" in tool.attributes["gen_ai.tool.call.arguments"]
    [child] = [s for s in spans if s.name == "invoke_agent subagent"]
    assert "use the key ***" in child.attributes["gen_ai.input.messages"]
    assert "done with ***" in child.attributes["gen_ai.output.messages"]


async def test_a_huge_tool_result_is_cut_to_the_logs_bound(traced, exporter) -> None:
    # One span of megabytes made the batch's OTLP request too large, and the collector refused every
    # span in it.
    tracing, hooks = traced
    await hooks.run("tool_start", session_id="s", turn_id="t", tool_name="read_file", call_id="k", arguments={})
    await hooks.run("tool_end", session_id="s", turn_id="t", call_id="k", ok=True,
                    output="start " + "x" * 3_000_000 + " end")
    [tool] = exporter.get_finished_spans()
    result = tool.attributes["gen_ai.tool.call.result"]
    assert len(result) < MAX_TEXT_CHARS + 100
    assert result.startswith("start ") and result.endswith(" end") and "characters cut" in result


async def test_a_childs_tool_call_cancelled_outright_ends_with_the_child(traced, exporter) -> None:
    # A cancelled tool call runs no tool_end hook; its span stayed open, never exported, for ever.
    tracing, hooks = traced
    await start_child(hooks, "c2", "work")
    await hooks.run("tool_start", session_id="c2", turn_id="ct", tool_name="slow", call_id="k2", arguments={})
    await stop_child(hooks, "c2", None, status="interrupted")
    assert sorted(s.name for s in exporter.get_finished_spans()) == ["execute_tool slow", "invoke_agent subagent"]
    assert not tracing._tools
