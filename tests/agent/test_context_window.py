import pytest

from agent._context_window import context_window, remember_window, stated_window
from agent._errors import exceeds_context
from agent.models.scripted import ScriptedModel

XAI = "This model's maximum prompt length is 131072 but the request contains 140213 tokens."
TGI_INPUTS = "Input validation error: `inputs` must have less than 4096 tokens. Given: 5000"
TGI_TOTAL = ("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8193. Given: 9000 `inputs` tokens "
             "and 512 `max_new_tokens`")


@pytest.mark.parametrize("text, window", [
    (XAI, 131072),
    (TGI_INPUTS, 4096),
    # The bound holds the answer too: the conversation had the bound less max_new_tokens.
    (TGI_TOTAL, 7681),
    ("`inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4500 `inputs` tokens and 0 `max_new_tokens`", 4096),
    ("`inputs` tokens + `max_new_tokens` must be <= 131073. Given: 198342 `inputs` tokens", 131073),  # cut short
    # No conversation fits beside such an answer: there is no window to learn from it.
    ("`inputs` tokens + `max_new_tokens` must be <= 2048. Given: 17 `inputs` tokens and 10000 `max_new_tokens`", None),
])
def test_the_window_is_read_from_xais_and_text_generation_inferences_wordings(text, window):
    assert exceeds_context(text)  # the refusals the session compacts for are the ones read here
    assert stated_window(text) == window


def test_text_generation_inferences_bound_on_conversation_and_answer_is_remembered_as_the_conversations_room():
    model = ScriptedModel({}, context_window=128_000)
    remember_window(model, TGI_TOTAL)
    assert context_window(model) == 7681
    remember_window(model, XAI)  # a larger window named later does not undo a smaller one
    assert context_window(model) == 7681
