"""What a model server's reply names its model as, in /metrics and in traces: a name with a lone surrogate (JSON may
spell half of an emoji as ``"\\ud83d"``; a router's or a proxy's name cut short) is mended, and the names of model
call spans stay few however many names replies give."""

from __future__ import annotations

import aiohttp
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import HookRegistry
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.metrics import MAX_MODELS
from gateway.testing import RecordingAdapter, make_config
from gateway.tracing import Tracing
from tests.gateway.observing import samples, served
from tests.gateway.wire import ask, openai_model

ODD = "router/pick-\ud83d"
MENDED = "router/pick-\ufffd"


def reply(text: str) -> dict:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": ODD,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}


async def test_metrics_stay_readable_after_a_reply_names_its_model_with_a_lone_surrogate(tmp_path, llm,
                                                                                         gateways) -> None:
    # The label went into the registry as it came, and every scrape after it was a 500 for the life of the
    # process: every series of the gateway absent, each `absent()` and `up` alert firing at once.
    server = await llm()
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    server.push_raw(reply("hi"))
    async with served(gateway) as http_server:
        assert await ask(chat, gateway, "hello") == "hi"
        async with aiohttp.ClientSession() as http, http.get(f"{http_server.url}/metrics") as response:
            assert response.status == 200
            value = samples(await response.text())
    assert value("switchboard_model_calls_total", model=MENDED, role="parent", outcome="ok") == 1


async def test_spans_of_such_a_reply_can_be_sent_to_a_collector(tmp_path, llm) -> None:
    # OTLP's protobuf takes only UTF-8: the span named `chat <model>` failed the export of its whole batch, the
    # other turns' spans in it dropped and the collector reported as down.
    server = await llm()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    chat = RecordingAdapter()
    config = make_config(tmp_path, model=openai_model(server))
    model = OpenAIModel(ModelSettings(provider="openai", name="parent-model", base_url=server.base_url,
                                      api_key="sk-test", max_retries=0), env={})
    gateway = Gateway(AgentHost(config, model=model), [chat], tracer_provider=provider)
    await gateway.start()
    try:
        server.push_raw(reply("hi"))
        assert await ask(chat, gateway, "hello") == "hi"
    finally:
        await gateway.stop(grace=0)
    spans = exporter.get_finished_spans()
    assert encode_spans(spans).SerializeToString()
    models = {s.attributes.get("gen_ai.response.model") for s in spans} - {None}
    assert models == {MENDED}


async def test_model_call_spans_are_named_after_the_model_asked_for_and_stay_few() -> None:
    # Each span was named after the model its reply named (a router's pick, a dated version): a provider naming a
    # new one in each reply added span names without end, and a collector's span metrics a series per name.
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = Tracing(provider, request_model="router/auto")
    hooks = HookRegistry()
    tracing.hooks(hooks)
    call = {"session_id": "s1", "turn_id": "t1", "prompt_tokens": 1, "completion_tokens": 1, "cost_usd": None,
            "duration_seconds": 0.01, "error": None}
    for n in range(MAX_MODELS + 10):
        await hooks.run("model_call", role="parent", model=f"pick-{n}", **call)
        await hooks.run("model_call", role="leaf", model=f"small-{n}", **call)
    provider.shutdown()
    spans = exporter.get_finished_spans()
    parents = [s for s in spans if s.attributes["gen_ai.response.model"].startswith("pick-")]
    leaves = [s.name for s in spans if s.attributes["gen_ai.response.model"].startswith("small-")]
    assert {s.name for s in parents} == {"chat router/auto"}
    assert leaves == [f"chat small-{n}" for n in range(MAX_MODELS - 1)] + ["chat"] * 11
    # The attributes still say which model answered each call.
    assert [s.attributes["gen_ai.response.model"] for s in parents] == [f"pick-{n}" for n in range(MAX_MODELS + 10)]
