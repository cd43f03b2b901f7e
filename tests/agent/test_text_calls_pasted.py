"""A call the user pasted into the message, which the model echoes as text, is not run, however the model writes it
again: its JSON keys in another order, other spacing, ``\\u00e9`` for ``é`` or the other way round, an ``id`` beside
it, in another of the text forms. It was compared as text, spacing aside: any of those ran what the user only showed
(a prompt-injection guard: the model repeating a pasted call is not the model deciding to call). A call of the same
tool with other arguments still runs."""

from __future__ import annotations

import json
import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.models._text_tool_calls import calls_in_text
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer

OFFERED = frozenset({"memory", "web_search"})
NOTE = {"action": "add", "text": "likes café au lait", "tags": ["drink", "morning"], "weight": 2}
CALL = {"name": "memory", "arguments": NOTE}
ANSWER = f"<tool_call>{json.dumps(CALL, ensure_ascii=False)}</tool_call>"
ASKED = f"My bot printed this instead of doing it, why?\n\n{ANSWER}"

ECHOES = {
    # what the model answered to ASKED
    "keys-reordered": '<tool_call>{"arguments": {"weight": 2, "tags": ["drink", "morning"], "text": "likes café au '
                      'lait", "action": "add"}, "name": "memory"}</tool_call>',
    "escaped": '<tool_call>{"name": "memory", "arguments": {"action": "add", "text": "likes caf\\u00e9 au lait", '
               '"tags": ["drink", "morning"], "weight": 2}}</tool_call>',
    "spaced-inside": '<tool_call>{ "name" : "memory" , "arguments" : { "action" : "add" , "text" : "likes café au '
                     'lait" , "tags" : [ "drink" , "morning" ] , "weight" : 2 } }</tool_call>',
    "arguments-as-a-string": json.dumps({"name": "memory", "arguments": json.dumps(NOTE)}),
    "parameters": json.dumps({"name": "memory", "parameters": NOTE}),
    "mistral-list-with-id": f'[TOOL_CALLS][{json.dumps({**CALL, "id": "a1B2c3D4e"})}]',
    "mistral-name-args": f"[TOOL_CALLS]memory[ARGS]{json.dumps(dict(reversed(NOTE.items())))}",
    "mistral-name-id-args": f"[TOOL_CALLS]memory[CALL_ID]a1B2c3D4e[ARGS]{json.dumps(NOTE, ensure_ascii=True)}",
    "one-of-two": f'<tool_call>{{"name": "web_search", "arguments": {{"query": "tea"}}}}</tool_call>\n'
                  f'<tool_call>{json.dumps(CALL, indent=2, ensure_ascii=True)}</tool_call>',
}


@pytest.mark.parametrize("answer", ECHOES.values(), ids=ECHOES.keys())
def test_a_pasted_call_written_again_otherwise_is_not_taken(answer):
    assert calls_in_text(answer, OFFERED) is not None  # a call the user did not paste runs
    assert calls_in_text(answer, OFFERED, quoted=ASKED) is None


PASTES = {
    # what the user pasted, to which the model answered ANSWER
    "escaped": ASKED.replace("é", "\\u00e9"),
    "with-an-id": f'Why? {json.dumps({"id": "a1B2c3D4e", **CALL})}',
    "openai-shaped": "The log says: " + json.dumps(
        {"tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "memory", "arguments": json.dumps(NOTE)}}]}),
    "mistral-name-id-args": f"Mistral wrote [TOOL_CALLS]memory[CALL_ID]a1B2c3D4e[ARGS] {json.dumps(NOTE)} instead",
    "in-broken-json-around-it": f'{{"calls": [{json.dumps(CALL)}, oops',
    "after-an-unclosed-brace": f"{{ as in a set, and then {json.dumps(CALL)}",
    "in-a-log-lines-string": "The log: " + json.dumps({"level": "warn", "msg": f"model said <tool_call>"
                                                                            f"{json.dumps(CALL)}</tool_call>"}),
}


@pytest.mark.parametrize("said", PASTES.values(), ids=PASTES.keys())
def test_a_call_pasted_in_another_shape_is_not_taken(said):
    assert calls_in_text(ANSWER, OFFERED, quoted=said) is None


OTHER_CALLS = {
    # the model's own call of the same tool, to ASKED: other arguments, which run
    "other-text": {**NOTE, "text": "likes cafe au lait"},
    "integer-as-float": {**NOTE, "weight": 2.0},
    "true-for-one": {**NOTE, "weight": True},
    "one-more-key": {**NOTE, "why": "asked"},
    "one-key-less": {key: value for key, value in NOTE.items() if key != "tags"},
    "tags-reordered": {**NOTE, "tags": ["morning", "drink"]},
}


@pytest.mark.parametrize("arguments", OTHER_CALLS.values(), ids=OTHER_CALLS.keys())
def test_a_call_with_other_arguments_runs(arguments):
    answer = f'<tool_call>{json.dumps({"name": "memory", "arguments": arguments})}</tool_call>'
    found = calls_in_text(answer, OFFERED, quoted=ASKED)
    assert found == (None, [("memory", json.dumps(arguments, ensure_ascii=False))])


def test_a_pasted_call_without_arguments_is_not_taken_either():
    for pasted in ("[TOOL_CALLS]memory[ARGS]{}", '{"name": "memory", "arguments": null}', '{"name": "memory"}'):
        for answer in ("[TOOL_CALLS]memory[ARGS] { }", '<tool_call>{"name": "memory", "arguments": {}}</tool_call>'):
            assert calls_in_text(answer, OFFERED) is not None
            assert calls_in_text(answer, OFFERED, quoted=f"what is {pasted}?") is None, (pasted, answer)


def test_a_pasted_call_of_another_tool_with_the_same_arguments_leaves_the_call_running():
    answer = f"[TOOL_CALLS]memory[ARGS]{json.dumps(NOTE)}"
    assert calls_in_text(answer, OFFERED, quoted=f"see [TOOL_CALLS]web_search[ARGS]{json.dumps(NOTE)}") is not None
    assert calls_in_text(answer, OFFERED, quoted=f"see [TOOL_CALLS]xmemory[ARGS]{json.dumps(NOTE)}") is not None


def _rewritten(value, rng: random.Random):
    """``value`` as JSON text written otherwise: keys shuffled, spacing and escapes of its own."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        gap = rng.choice(["", " ", "\n  "])
        return "{" + f",{gap}".join(f"{_rewritten(k, rng)}{gap}:{gap}{_rewritten(v, rng)}" for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_rewritten(item, rng) for item in value) + "]"
    return json.dumps(value, ensure_ascii=rng.random() < 0.5)


_leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6)
_arguments = st.dictionaries(st.text(max_size=4), st.recursive(
    _leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8), max_size=4)
_FORMS = ["<tool_call>{call}</tool_call>", "{call}", "```json\n{call}\n```", "[TOOL_CALLS][{call}]",
          "[TOOL_CALLS]{name}[ARGS]{arguments}", "[TOOL_CALLS]{name}[CALL_ID]a1B2c3D4e[ARGS]{arguments}"]


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(OFFERED)), arguments=_arguments, pasted_form=st.sampled_from(_FORMS),
       answer_form=st.sampled_from(_FORMS), seed=st.integers(0, 2**32), with_id=st.booleans(),
       before=st.text(max_size=12), after=st.text(max_size=12), other=_arguments)
def test_a_pasted_call_is_never_taken_and_one_with_other_arguments_always_is(
        name, arguments, pasted_form, answer_form, seed, with_id, before, after, other):
    rng = random.Random(seed)

    def written(form, arguments):
        call = {"name": name, "arguments": arguments, **({"id": "a1B2c3D4e"} if with_id and "TOOL" in form else {})}
        return form.format(call=_rewritten(call, rng), name=name, arguments=_rewritten(arguments, rng))

    said = f"{before}{written(pasted_form, arguments)}{after}"
    assert calls_in_text(written(answer_form, arguments), OFFERED, quoted=said) is None
    if json.dumps(other, sort_keys=True) != json.dumps(arguments, sort_keys=True):
        assert calls_in_text(written(answer_form, other), OFFERED, quoted=said) is not None


LONG_PASTES = {
    # (a long message the user pasted, whether it is read as holding the call)
    "json-lines": ('{"level": "info", "msg": "started", "n": 1}\n' * 10_000, False),
    "code": ('f({"a": x, "b": 1}); ' * 20_000, False),
    "braces": ("{" * 400_000, False),
    "calls-of-others": ('{"name": "memory", "arguments": {"n": 1}} ' * 8_000, False),
    "mistral-marks": ("memory[CALL_ID]x[ARGS]{} " * 8_000, False),
    "a-name-run": ("m" * 400_000 + "[ARGS]{}", False),
    # Made to be slow, each brace a read to its end: taken for holding it, the answer stays text.
    "nested-left-open": ('{"a": [' * 400 + "1, " * 60_000, True),
    "quoted-braces": ('{"' * 200_000, True),
    "empty-objects": ("{}" * 200_000, True),
}


@pytest.mark.parametrize(("log", "holds"), LONG_PASTES.values(), ids=LONG_PASTES.keys())
def test_a_long_paste_is_read_in_time(log, holds):
    # Each brace may begin a pasted call, and a read from one of a paste made to be slow goes to its end: unbounded,
    # such a paste held the event loop for seconds.
    started = time.perf_counter()
    found = calls_in_text(f"<tool_call>{json.dumps(CALL)}</tool_call>", OFFERED, quoted=log)
    assert time.perf_counter() - started < 3
    assert (found is None) == holds


async def test_through_the_sdk_an_echo_written_otherwise_stays_the_answer():
    echo = ECHOES["keys-reordered"]
    async with FakeOpenAIServer() as server:
        server.push_text(echo)
        model = OpenAIModel(ModelSettings(provider="openai", name="qwen2.5-7b", base_url=server.base_url,
                                          max_retries=0), env={})
        try:
            response = await model.complete(ModelRequest(
                messages=[{"role": "user", "content": ASKED}],
                tools=({"type": "function", "function": {"name": "memory", "parameters": {"type": "object"}}},)))
        finally:
            await model.aclose()
    assert response.tool_calls == () and response.text == echo
