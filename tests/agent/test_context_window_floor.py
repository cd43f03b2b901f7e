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
