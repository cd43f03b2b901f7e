"""A window a server's refusal names is believed only where a conversation fits in it: one of a token or none,
from a garbled text or text-generation-inference's bound less a `max_new_tokens` almost as large, was kept, and
every later request of every session was compacted towards nothing."""

import pytest

from agent._context_window import context_window, remember_window, stated_window
from agent.models.scripted import ScriptedModel


@pytest.mark.parametrize("text", [
    "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 30 `inputs` tokens and "
    "4095 `max_new_tokens`",
    "This model's maximum context length is 0 tokens. However, you requested 5000 tokens.",
    "Input validation error: `inputs` must have less than 1 tokens. Given: 5000",
    "request (4476 tokens) exceeds the available context size (512 tokens)",
], ids=["tgi-total-answer-nearly-all", "zero", "one", "under-the-least-setting"])
def test_a_window_too_small_for_any_conversation_is_not_believed(text):
    model = ScriptedModel({}, context_window=8192)
    remember_window(model, text)
    assert stated_window(text) is None and context_window(model) == 8192


def test_the_least_window_a_setting_takes_is_believed():
    model = ScriptedModel({}, context_window=8192)
    remember_window(model, "request (4476 tokens) exceeds the available context size (1024 tokens)")
    assert context_window(model) == 1024


def test_a_window_too_small_to_believe_is_named_to_the_operator_once(caplog):
    # A real one is llama.cpp's -c 2048 shared by --parallel 4 slots: it was dropped unsaid, and the operator, told
    # to set model.context_window to the server's window, learned neither it nor that the setting cannot go so low.
    model = ScriptedModel({}, context_window=8192)
    for _ in range(3):
        remember_window(model, "request (4476 tokens) exceeds the available context size (512 tokens)")
    said = [r.getMessage() for r in caplog.records if r.name == "agent.context_window"]
    assert len(said) == 1 and caplog.records[0].levelname == "WARNING"
    assert "room for 512 tokens" in said[0] and "under 1024, the least model.context_window takes" in said[0]
    assert "still compacted to the 8192 of model.context_window" in said[0] and "give the server a larger" in said[0]
    assert context_window(model) == 8192
