"""More of what self-hosted servers without a parser for the model's format leave in the answer's text: a call whose
``arguments`` are ``null``, Mistral's ``[TOOL_CALLS]`` forms, and a call the user pasted into the message, which the
model echoes. The openai provider against the fake server, through the gateway."""

from __future__ import annotations

import json

import pytest

from gateway.testing import RecordingAdapter, make_config
from tests.gateway.wire import ask, openai_model, tool_results

NOTE = {"action": "add", "text": "likes green tea"}
OTHER = {"action": "add", "text": "walks the dog at six"}


async def answered(tmp_path, llm, gateways, content: str, said: str = "remember that I like green tea"):
    """The fake server's requests and the chat's reply after the model answers ``content`` to ``said``, then
    ``Noted.`` to whatever comes next."""
    server = await llm()
    server.push_text(content)
    server.push_text("Noted.")
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    reply = await ask(chat, gateway, said)
    return server.requests, reply


def calls_sent_back(request: dict) -> list[tuple[str, str]]:
    (called,) = [m for m in request["messages"] if m.get("tool_calls")]
    return [(c["function"]["name"], c["function"]["arguments"]) for c in called["tool_calls"]]


NULL_ARGUMENTS = {
    "hermes": '<tool_call>\n{"name": "memory", "arguments": null}\n</tool_call>',
    "bare": '{"name": "memory", "arguments": null}',
    "llama": '<|python_tag|>{"name": "memory", "parameters": null}',
}


@pytest.mark.parametrize("content", NULL_ARGUMENTS.values(), ids=NULL_ARGUMENTS.keys())
async def test_a_call_whose_arguments_are_null_runs_with_none(tmp_path, llm, gateways, content):
    # Some templates write null for a call of a tool without parameters: the chat read the JSON as the reply.
    requests, reply = await answered(tmp_path, llm, gateways, content)
    assert reply == "Noted." and len(requests) == 2
    assert calls_sent_back(requests[1]) == [("memory", "{}")]
    assert len(tool_results(requests[1])) == 1


MISTRAL = {
    "list": f'[TOOL_CALLS][{json.dumps({"name": "memory", "arguments": NOTE})}]',
    "list-spaced-with-id": f'[TOOL_CALLS] [{json.dumps({"name": "memory", "arguments": NOTE, "id": "a1B2c3D4e"})}]',
    "name-args": f"[TOOL_CALLS]memory[ARGS]{json.dumps(NOTE)}",
    "name-args-after-reasoning": f"<think>Keep it.</think>\n[TOOL_CALLS]memory[ARGS]{json.dumps(NOTE)}",
}


@pytest.mark.parametrize("content", MISTRAL.values(), ids=MISTRAL.keys())
async def test_mistrals_tool_calls_left_in_the_text_run(tmp_path, llm, gateways, content):
    # The chat read "[TOOL_CALLS]…" as the reply, and no note was kept.
    requests, reply = await answered(tmp_path, llm, gateways, content)
    assert reply == "Noted." and len(requests) == 2
    assert tool_results(requests[1]) == ["added note 1"]
    assert [(name, json.loads(arguments)) for name, arguments in calls_sent_back(requests[1])] == [("memory", NOTE)]
    assert "TOOL_CALLS" not in json.dumps(requests[1]["messages"])


async def test_several_of_mistrals_name_args_calls_run_each(tmp_path, llm, gateways):
    content = f"[TOOL_CALLS]memory[ARGS]{json.dumps(NOTE)}[TOOL_CALLS]memory[ARGS]{json.dumps(OTHER)}"
    requests, reply = await answered(tmp_path, llm, gateways, content)
    assert reply == "Noted."
    assert tool_results(requests[1]) == ["added note 1", "added note 2"]


MISTRAL_NOT_CALLS = {
    "no-such-tool": '[TOOL_CALLS]launch_rockets[ARGS]{"count": 3}',
    "no-such-tool-in-list": '[TOOL_CALLS][{"name": "launch_rockets", "arguments": {}}]',
    "after-words": 'Mistral writes a call as [TOOL_CALLS][{"name": "memory", "arguments": {"action": "list"}}]',
    "words-after": '[TOOL_CALLS]memory[ARGS]{"action": "list"} is how it looks.',
    "broken-json": '[TOOL_CALLS]memory[ARGS]{"action": "li',
    "args-not-an-object": "[TOOL_CALLS]memory[ARGS][1, 2]",
    "no-name": '[TOOL_CALLS][ARGS]{"action": "list"}',
    "other-keys": '[TOOL_CALLS][{"name": "memory", "arguments": {}, "why": "because"}]',
}


@pytest.mark.parametrize("content", MISTRAL_NOT_CALLS.values(), ids=MISTRAL_NOT_CALLS.keys())
async def test_an_answer_that_only_looks_like_mistrals_calls_is_the_answer(tmp_path, llm, gateways, content):
    server = await llm()
    server.push_text(content)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, "what does a tool call look like?") == content
    assert len(server.requests) == 1


BLOCK = f'<tool_call>\n{json.dumps({"name": "memory", "arguments": NOTE})}\n</tool_call>'
ECHOES = {
    # (what the user pasted into the message, what the model answered)
    "hermes-block": (f"My bot printed this instead of doing it, why?\n\n{BLOCK}", BLOCK),
    "hermes-block-respaced": (f"What does this do?\n{BLOCK}",
                              f'<tool_call>{json.dumps({"name": "memory", "arguments": NOTE}, indent=2)}</tool_call>'),
    "bare-json": (f'Is {json.dumps({"name": "memory", "arguments": NOTE})} valid?',
                  json.dumps({"name": "memory", "arguments": NOTE})),
    "json-fence": (f'Explain:\n```json\n{json.dumps({"name": "memory", "arguments": NOTE})}\n```',
                   f'```json\n{json.dumps({"name": "memory", "arguments": NOTE})}\n```'),
    "mistral": (f"Qwen? No, Mistral: [TOOL_CALLS]memory[ARGS]{json.dumps(NOTE)}",
                f"[TOOL_CALLS]memory[ARGS]{json.dumps(NOTE)}"),
}


@pytest.mark.parametrize(("said", "content"), ECHOES.values(), ids=ECHOES.keys())
async def test_a_call_the_user_pasted_and_the_model_echoes_is_not_run(tmp_path, llm, gateways, said, content):
    # The user showed a call (a log line, a question about the format); the model repeating it ran it.
    server = await llm()
    server.push_text(content)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, said) == content
    assert len(server.requests) == 1


async def test_a_call_other_than_the_one_the_user_pasted_still_runs(tmp_path, llm, gateways):
    pasted = f'<tool_call>{json.dumps({"name": "memory", "arguments": OTHER})}</tool_call>'
    requests, reply = await answered(tmp_path, llm, gateways, BLOCK, said=f"Not this: {pasted}; I like green tea")
    assert reply == "Noted."
    assert tool_results(requests[1]) == ["added note 1"]


async def test_a_call_pasted_in_an_earlier_message_runs_when_the_model_makes_it_now(tmp_path, llm, gateways):
    server = await llm()
    server.push_text("That is a call of the memory tool.")
    server.push_text(BLOCK)
    server.push_text("Noted.")
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, f"What is this? {BLOCK}") == "That is a call of the memory tool."
    assert await ask(chat, gateway, "Then do it.") == "Noted."
    assert tool_results(server.requests[2]) == ["added note 1"]


MARKED = {"action": "add", "text": "Mistral's calls begin [TOOL_CALLS]name[ARGS]"}


@pytest.mark.parametrize("again", [False, True], ids=["one", "two"])
async def test_mistrals_name_args_call_whose_arguments_hold_the_mark_runs(tmp_path, llm, gateways, again):
    # Split at each mark, the note's text cut the call in two: no call ran and the chat read "[TOOL_CALLS]memory…".
    content = f"[TOOL_CALLS]memory[ARGS]{json.dumps(MARKED)}" + (f"[TOOL_CALLS]memory[ARGS]{json.dumps(OTHER)}"
                                                                  if again else "")
    requests, reply = await answered(tmp_path, llm, gateways, content, said="remember how Mistral marks its calls")
    assert reply == "Noted." and len(requests) == 2
    assert [(name, json.loads(arguments)) for name, arguments in calls_sent_back(requests[1])] == (
        [("memory", MARKED), ("memory", OTHER)] if again else [("memory", MARKED)])
