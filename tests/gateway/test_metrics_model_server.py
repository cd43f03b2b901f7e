"""/metrics as an SRE alerts on it: the model server taken for down (`agent.models._outage`), a model's calls held
there, how long model calls take, and HELP texts that name their unit."""

from __future__ import annotations

import pytest

from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeClock
from gateway.testing import RecordingAdapter, make_config
from tests.gateway.observing import samples
from tests.gateway.wire import ask, openai_model

DOWN = "<html><title>503 Service Unavailable</title></html>"  # a load balancer's: the server behind is not answering
UPSTREAM = {"error": {"message": "Provider returned error", "type": "server_error", "param": None, "code": None}}
TPM = {"error": {"message": "Rate limit reached for m on tokens per min (TPM)", "type": "tokens", "param": None,
                 "code": "rate_limit_exceeded"}}


def page(gateway):
    return samples(gateway.metrics.exposition().decode())


async def test_a_model_server_taken_for_down_reads_0_until_a_probe_is_answered(tmp_path, llm, gateways) -> None:
    # Calls not sent count as failures of the last one's kind: without the gauge, an outage of hours and three
    # failed calls read alike, and an alert on "the model server is down" could not be written.
    server, clock = await llm(default_text="back again"), FakeClock(autojump=False)
    chat = RecordingAdapter()
    model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                      max_retries=0), env={}, clock=clock)
    # Waiting for the server to come back off (`test_model_down_wait`): the fourth is refused at once, not sent.
    gateway = await gateways(make_config(tmp_path, model=openai_model(server, wait_when_down_seconds=0)), [chat],
                             model=model)
    await ask(chat, gateway, "hello")
    url = server.base_url.rstrip("/")
    assert page(gateway)("switchboard_model_server_up", server=url) == 1
    for _ in range(3):
        server.push_error(503, DOWN)
    for n in range(4):
        await ask(chat, gateway, f"question {n}")
    assert len(server.requests) == 4  # the fourth was not sent
    value = page(gateway)
    assert value.labels("switchboard_model_server_up", "server") == {url}
    assert value("switchboard_model_server_up", server=url) == 0
    clock.advance(10)  # the next message is sent as a probe, and answered
    assert await ask(chat, gateway, "anyone there?") == "back again"
    assert page(gateway)("switchboard_model_server_up", server=url) == 1


@pytest.mark.parametrize("reason", ["rate_limited", "server_error"])
async def test_a_models_calls_held_at_a_server_that_answers_read_by_reason_until_a_probe_is_answered(
        reason, tmp_path, llm, gateways) -> None:
    # One key's 429s, or one model's 5xx in the server's own words (OpenRouter's upstream), hold that model's calls
    # while the server is up: switchboard_model_server_up read 1 all along, and the held calls showed nowhere.
    server, clock = await llm(default_text="back again"), FakeClock(autojump=False)
    chat = RecordingAdapter()
    model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-secret-key",
                                      max_retries=0), env={}, clock=clock)
    # Waiting for the server to come back off (`test_model_down_wait`): the fourth is refused at once, not sent.
    gateway = await gateways(make_config(tmp_path, model=openai_model(server, wait_when_down_seconds=0)), [chat],
                             model=model)
    await ask(chat, gateway, "hello")
    url, other = server.base_url.rstrip("/"), {"rate_limited": "server_error", "server_error": "rate_limited"}[reason]
    assert page(gateway)("switchboard_model_held", server=url, model="m", reason=reason) == 0
    for _ in range(3):
        server.push_error(*((429, TPM) if reason == "rate_limited" else (503, UPSTREAM)))
    for n in range(4):
        await ask(chat, gateway, f"question {n}")
    assert len(server.requests) == 4  # the fourth was not sent
    text = gateway.metrics.exposition().decode()
    value = samples(text)
    assert value("switchboard_model_held", server=url, model="m", reason=reason) == 1
    assert value("switchboard_model_held", server=url, model="m", reason=other) == 0
    assert value("switchboard_model_server_up", server=url) == 1
    assert "sk-secret-key" not in text
    clock.advance(10)  # the next message is sent as a probe, and answered
    assert await ask(chat, gateway, "anyone there?") == "back again"
    assert page(gateway)("switchboard_model_held", server=url, model="m", reason=reason) == 0


async def test_model_calls_that_answered_are_timed_by_model_and_role(tmp_path, gateways) -> None:
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "hi"}], [{"text": "again"}]]})
    await ask(chat, gateway, "hello")
    await ask(chat, gateway, "hello again")
    value = page(gateway)
    assert value("switchboard_model_call_duration_seconds_count", model="scripted", role="parent") == 2
    assert value("switchboard_model_call_duration_seconds_bucket", model="scripted", role="parent", le="+Inf") == 2


async def test_each_help_text_names_the_unit_its_name_gives(tmp_path, gateways) -> None:
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    units = {"_seconds": "seconds", "_usd": "US dollars"}
    for family in gateway.metrics.registry.collect():
        for suffix, unit in units.items():
            if family.name.endswith(suffix):
                assert unit.lower() in family.documentation.lower(), family.name
