"""Which model a span names: the one asked for (``gen_ai.request.model``) only where it is known, the
one that answered (``gen_ai.response.model``) as the reply gave it. Read back with the SDK's
in-memory exporter."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import HookRegistry
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import RecordingAdapter, make_config, settled
from gateway.tracing import Tracing
from tests.gateway.observing import LIST


def models(span) -> dict[str, str]:
    return {k: v for k, v in span.attributes.items() if k in ("gen_ai.request.model", "gen_ai.response.model")}


async def test_a_child_on_delegation_model_is_not_traced_as_the_parents_model(tmp_path) -> None:
    # Every subagent span named the parent's model.name as the model asked for, whatever delegation.model
    # (or a route) ran the child on: a trace filtered by model put the children's work under the wrong one.
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    chat = RecordingAdapter()
    config = make_config(tmp_path, model={"name": "demo-large", "demo": {"child_steps": 1, "step_seconds": 0}},
                         delegation={"model": "demo-small", "gateway_mode": "inline"})
    gateway = Gateway(AgentHost(config), [chat], tracer_provider=provider)
    await gateway.start()
    try:
        await chat.say(LIST)
        await settled(gateway, timeout=10)
    finally:
        await gateway.stop(grace=0)
    spans = exporter.get_finished_spans()
    children = [s for s in spans if s.name == "invoke_agent subagent"]
    assert len(children) == 2
    assert all(models(s) == {"gen_ai.response.model": "demo-small"} for s in children)
    [turn] = [s for s in spans if s.name == "invoke_agent switchboard"]
    assert turn.attributes["gen_ai.request.model"] == "demo-large"
    child_calls = [s for s in spans if s.name == "chat demo-small"]
    assert child_calls and all(models(s) == {"gen_ai.response.model": "demo-small"} for s in child_calls)
    parent_calls = [s for s in spans if s.name == "chat demo-large"]
    assert parent_calls and all(models(s) == {"gen_ai.request.model": "demo-large",
                                              "gen_ai.response.model": "demo-large"} for s in parent_calls)


async def test_a_model_call_names_as_asked_only_the_model_known_to_be_asked_for() -> None:
    # The name a reply gives (a dated version, a router's pick) was recorded as the model asked for too.
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = Tracing(provider, request_model="router/auto")
    hooks = HookRegistry()
    tracing.hooks(hooks)
    call = {"session_id": "s1", "turn_id": "t1", "prompt_tokens": 1, "completion_tokens": 1, "cost_usd": None,
            "duration_seconds": 0.01}
    await hooks.run("model_call", role="parent", model="vendor/model-2024-08-06", error=None, **call)
    await hooks.run("model_call", role="leaf", model="vendor/small-2024-07-18", error=None, **call)
    await hooks.run("model_call", role="leaf", model="fast", error="rate_limited", **call)
    provider.shutdown()
    parent, leaf, failed = exporter.get_finished_spans()
    assert models(parent) == {"gen_ai.request.model": "router/auto", "gen_ai.response.model": "vendor/model-2024-08-06"}
    assert models(leaf) == {"gen_ai.response.model": "vendor/small-2024-07-18"}
    assert models(failed) == {"gen_ai.request.model": "fast"}  # no reply: the name is the called model's own
