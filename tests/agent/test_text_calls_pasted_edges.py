"""Edges of `_pasted` (a call the user pasted, echoed by the model, does not run): a message holding no call of the
tool does not stop the model's own call (a tool's definition, a data file of small objects), a message made to be
slow with calls nested in calls' arguments is read in time, and calls pasted in Anthropic's and Gemini's shapes are
known."""

from __future__ import annotations

import json
import time

import pytest

from agent.models._text_tool_calls import calls_in_text

OFFERED = frozenset({"memory", "list_reminders"})
NOTE = {"action": "add", "text": "likes tea"}
ANSWER = f'<tool_call>{json.dumps({"name": "memory", "arguments": NOTE})}</tool_call>'
NO_ARGUMENTS = '<tool_call>{"name": "list_reminders", "arguments": {}}</tool_call>'


@pytest.mark.parametrize("said", [
    'I added this tool: {"name": "list_reminders", "description": "Lists the reminders"}. What do I have?',
    'My tools: [{"name": "list_reminders", "description": "Lists them", "strict": true}], use it',
])
def test_a_tools_definition_in_the_message_is_no_pasted_call(said):
    # A definition names the tool but calls nothing: the model's own call of it runs, as it did before.
    assert calls_in_text(NO_ARGUMENTS, OFFERED, quoted=said) is not None


def test_a_name_alone_or_with_an_id_is_still_a_pasted_call():
    for said in ('why {"name": "list_reminders"}?', 'see {"id": "a1B2c3D4e", "name": "list_reminders"}'):
        assert calls_in_text(NO_ARGUMENTS, OFFERED, quoted=said) is None, said


def test_a_pasted_data_file_of_small_objects_leaves_the_models_own_call_running():
    # ~30 KB of compact records: each is a read, but the whole takes milliseconds; taken for a message made to be
    # slow, the model's call of another note was refused as pasted, and its JSON was the chat's reply.
    data = json.dumps([{"x": i % 10, "y": i % 7} for i in range(2_000)], separators=(",", ":"))
    started = time.perf_counter()
    assert calls_in_text(ANSWER, OFFERED, quoted=f"Plot this: {data}") is not None
    assert time.perf_counter() - started < 1


def test_calls_nested_in_calls_arguments_are_read_in_time():
    # Each call's arguments hold another call of the tool: its canonical text, written for every level, came to
    # the square of the nesting, not counted as read; a 1 MB message held the event loop for about ten seconds.
    nested = '{"name":"memory","arguments":' * 800 + "{}" + "}" * 800
    said = " ".join([nested] * 36)
    started = time.perf_counter()
    calls_in_text(ANSWER, OFFERED, quoted=said)
    assert time.perf_counter() - started < 3


@pytest.mark.parametrize("said", [
    json.dumps({"type": "tool_use", "id": "toolu_01", "name": "memory", "input": NOTE}),
    json.dumps({"functionCall": {"name": "memory", "args": NOTE}}),
], ids=["anthropic", "gemini"])
def test_a_call_pasted_in_another_providers_shape_is_not_taken(said):
    assert calls_in_text(ANSWER, OFFERED) is not None
    assert calls_in_text(ANSWER, OFFERED, quoted=f"The log shows {said}, why?") is None
