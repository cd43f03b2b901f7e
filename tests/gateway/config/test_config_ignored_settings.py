"""Settings the gateway would accept and then not use, or use in a way that breaks delivery: each is an error
naming its key, and none echoes a secret."""

from __future__ import annotations

import pytest

from gateway.config import ConfigError

KEY = "sk-route-secret-0123456789"


def errors_of(load, text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load(text)
    return info.value.errors


def test_a_model_map_option_on_the_demo_provider_with_a_server_is_refused(load):
    errors = errors_of(load, f"""
        plugins: [advanced_delegation]
        delegation:
          model_map:
            local: {{description: Local, provider: demo, model: m, base_url: "http://127.0.0.1:8000/v1",
                     api_key: {KEY}}}
        """)
    assert errors == [
        "delegation.model_map.local.base_url: not used by the demo provider (only openai reads it): set provider:"
        " openai or remove base_url",
        "delegation.model_map.local.api_key: not used by the demo provider (only openai reads it): set provider:"
        " openai or remove api_key",
    ]
    assert KEY not in "\n".join(errors)


def test_a_model_map_option_on_the_openai_provider_keeps_its_server(load):
    config, warnings = load(f"""
        plugins: [advanced_delegation]
        delegation:
          model_map:
            local: {{description: Local, provider: openai, model: m, base_url: "http://127.0.0.1:8000/v1",
                     api_key: {KEY}}}
        """)
    assert config.delegation.model_map["local"].base_url == "http://127.0.0.1:8000/v1" and warnings == []


@pytest.mark.parametrize("value", ["0", "-1", "0.05"])
def test_a_retry_after_cap_that_would_resend_a_refused_call_at_once_is_refused(load, value):
    [error] = errors_of(load, f"delivery: {{max_retry_after: {value}}}\n")
    assert error.startswith("delivery.max_retry_after: expected a number ≥ 0.1"), error


def test_a_short_retry_after_cap_is_taken(load):
    config, _ = load("delivery: {max_retry_after: 0.2}\n")
    assert config.delivery.max_retry_after == 0.2


def test_a_server_set_for_the_demo_model_is_warned_about(load):
    config, warnings = load(f"""
        model: {{name: llama3, base_url: "http://127.0.0.1:11434/v1", api_key: {KEY}}}
        """)
    assert config.model.provider == "demo"
    assert warnings == [
        "model.base_url: not used by the demo provider (only openai reads it), so the gateway answers with the demo"
        " model: set provider: openai or remove base_url",
        "model.api_key: not used by the demo provider (only openai reads it), so the gateway answers with the demo"
        " model: set provider: openai or remove api_key",
    ]


@pytest.mark.parametrize(("transcription", "reader"), [
    ("", "delegation: {provider: openai}"),  # children built on the parent's settings
    ("transcription: {name: whisper-1}", ""),  # voice transcription falls back to them
    ("", "plugins: [advanced_delegation]\ndelegation: {model_map: {big: {description: d, provider: openai,"
         " model: m}}}"),
])
def test_a_server_something_else_reads_is_not_warned_about(load, transcription, reader):
    _, warnings = load(f"""
model:
  base_url: "http://127.0.0.1:11434/v1"
  api_key: {KEY}
  {transcription}
{reader}
""")
    assert [w for w in warnings if w.startswith("model.")] == []
