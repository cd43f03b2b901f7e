"""Mistral's ``[TOOL_CALLS]name[CALL_ID]id[ARGS]{…}`` (its v11 tokenizer writes the call's id between the name and the
arguments: Mistral Small 3.2, Magistral, Devstral) left in the text by a server without Mistral's parser: read as the
call, keeping the id the model wrote, which its template sends back with the call's result. Before, only
``name[ARGS]{…}`` was read: the answer was the chat's reply, and no tool ran."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from agent import AgentSession, ToolRegistry
from agent.models import OpenAIModel
from agent.models._text_tool_calls import calls_in_text
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer

OFFERED = frozenset({"memory", "web_search"})
NOTE = {"action": "add", "text": "likes green tea"}


def test_a_call_with_its_id_is_read_and_keeps_the_id():
    found = calls_in_text(f"[TOOL_CALLS]memory[CALL_ID]a1B2c3D4e[ARGS]{json.dumps(NOTE)}", OFFERED)
    assert found == (None, [("memory", json.dumps(NOTE))])
    assert [call.id for call in found[1]] == ["a1B2c3D4e"]


def test_several_calls_each_keep_their_own_id_and_one_without_gets_none():
    answer = (f"[TOOL_CALLS]memory[CALL_ID]a1B2c3D4e[ARGS]{json.dumps(NOTE)}\n"
              '[TOOL_CALLS]web_search[ARGS]{"query": "tea"}'
              '[TOOL_CALLS]memory[CALL_ID]Zz9Yy8Xx7[ARGS]{"action": "list"}')
    _, calls = calls_in_text(answer, OFFERED)
    assert [(call[0], call.id) for call in calls] == [
        ("memory", "a1B2c3D4e"), ("web_search", None), ("memory", "Zz9Yy8Xx7")]


def test_the_id_of_nemos_list_form_is_kept_too():
    answer = f'[TOOL_CALLS][{json.dumps({"name": "memory", "arguments": NOTE, "id": "a1B2c3D4e"})}]'
    _, calls = calls_in_text(answer, OFFERED)
    assert calls == [("memory", json.dumps(NOTE))] and calls[0].id == "a1B2c3D4e"


NOT_CALLS = {
    "no-such-tool": '[TOOL_CALLS]launch[CALL_ID]a1B2c3D4e[ARGS]{"count": 3}',
    "words-after": '[TOOL_CALLS]memory[CALL_ID]a1B2c3D4e[ARGS]{"action": "list"} is how it looks.',
    "no-args-mark": '[TOOL_CALLS]memory[CALL_ID]a1B2c3D4e{"action": "list"}',
    "args-not-an-object": "[TOOL_CALLS]memory[CALL_ID]a1B2c3D4e[ARGS][1]",
    "spaced-id": '[TOOL_CALLS]memory[CALL_ID]a1 B2[ARGS]{"action": "list"}',
}


def test_what_only_looks_like_such_a_call_is_the_answer():
    for name, answer in NOT_CALLS.items():
        assert calls_in_text(answer, OFFERED) is None, name


@settings(max_examples=300, deadline=None)
@given(calls=st.lists(st.tuples(st.sampled_from(sorted(OFFERED)),
                                st.text(st.characters(codec="utf-8"), max_size=12).map(
                                    lambda text: "".join(c for c in text if not c.isspace() and c not in "[]")),
                                st.dictionaries(st.sampled_from(["text", "query"]),
                                                st.sampled_from(["[ARGS]", "[CALL_ID]", "[TOOL_CALLS]", "x", "{"]),
                                                max_size=2)),
                      min_size=1, max_size=3))
def test_any_id_without_spaces_or_brackets_is_kept_with_its_call(calls):
    answer = "".join(f"[TOOL_CALLS]{name}[CALL_ID]{call_id}[ARGS]{json.dumps(arguments)}"
                     for name, call_id, arguments in calls)
    _, found = calls_in_text(answer, OFFERED)
    assert found == [(name, json.dumps(arguments)) for name, _, arguments in calls]
    assert [call.id for call in found] == [call_id or None for _, call_id, _ in calls]


async def test_the_id_goes_back_with_the_call_and_its_result():
    seen = []
    tools = ToolRegistry()
    tools.add("memory", "notes", {"type": "object"}, lambda a, c: seen.append(c.call_id) or "added note 1",
              toolset="test")
    async with FakeOpenAIServer() as server:
        model = OpenAIModel(ModelSettings(provider="openai", name="mistral-small-3.2", base_url=server.base_url,
                                          max_retries=0), env={})
        try:
            server.push_text(f"[TOOL_CALLS]memory[CALL_ID]a1B2c3D4e[ARGS]{json.dumps(NOTE)}")
            server.push_text("Noted.")
            result = await AgentSession(model=model, tools=tools.resolve()).run_turn("remember I like green tea")
        finally:
            await model.aclose()
        sent = server.requests[1]["messages"]
    assert (result.exit_reason, result.text) == ("completed", "Noted.")
    assert seen == ["a1B2c3D4e"]
    (caller,) = [m for m in sent if m.get("tool_calls")]
    assert [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in caller["tool_calls"]] == [
        ("a1B2c3D4e", "memory", NOTE)]
    assert [(m["tool_call_id"], m["content"]) for m in sent if m["role"] == "tool"] == [("a1B2c3D4e", "added note 1")]
    assert "CALL_ID" not in json.dumps(sent)
