"""A call the user pasted is known in the forms a paste takes beside plain JSON, so the model echoing it does not run
it (a prompt-injection guard): its quotes escaped once or twice (JSON within a string, a log line cut short, a Python
bytes repr of one), a Python dict's repr (``{'name': 'memory', …}``, from a REPL), HTML's ``&quot;`` (from a web
page), the user's text in Unicode's decomposed form (NFD) where the model writes the composed one, and Mistral's
``memory [ARGS] {…}`` spaced out. Each of them ran the call the user only showed. The model's own call still runs."""

from __future__ import annotations

import html
import json
import random
import time
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.models._text_tool_calls import calls_in_text

OFFERED = frozenset({"memory", "web_search"})
NOTE = {"action": "add", "text": "likes café au lait", "tags": ["drink"], "weight": 2, "pinned": True, "due": None}
CALL = {"name": "memory", "arguments": NOTE}
ANSWER = f"<tool_call>{json.dumps(CALL, ensure_ascii=False)}</tool_call>"


def _escaped(text: str, times: int = 1) -> str:
    """``text`` as it stands within a JSON string, ``times`` over, its quotes left off."""
    for _ in range(times):
        text = json.dumps(text)[1:-1]
    return text


PASTES = {
    # what the user pasted, to which the model answered ANSWER
    "escaped-in-a-cut-log-line": f'2026-01-02 WARN msg="model said {_escaped(json.dumps(CALL))} and th',
    "escaped-unicode-kept": f"the log: {_escaped(json.dumps(CALL, ensure_ascii=False))} why",
    "escaped-twice": f"log: {_escaped(json.dumps(CALL), times=2)}",
    "bytes-repr": "print(body) shows " + repr(json.dumps({"msg": json.dumps(CALL)}).encode()),
    "python-repr": f">>> call\n{CALL!r}\nwhy did it not run?",
    "python-repr-in-a-list": f"tool_calls = {[{'id': 'call_1', **CALL}]!r}",
    "python-repr-from-a-web-page": html.escape(repr(CALL)),
    "html-quot": f"<pre>{html.escape(json.dumps(CALL, ensure_ascii=False))}</pre>",
    "html-numeric": json.dumps(CALL).replace('"', "&#34;"),
    "html-twice": html.escape(html.escape(json.dumps(CALL))),
    "nfd": unicodedata.normalize("NFD", f"why? {json.dumps(CALL, ensure_ascii=False)}"),
    "nfd-escaped": json.dumps(unicodedata.normalize("NFD", json.dumps(CALL, ensure_ascii=False))),
    "mistral-spaced": f"it wrote memory [ARGS] {json.dumps(NOTE)} instead",
    "mistral-spaced-id": f"it wrote [TOOL_CALLS] memory [CALL_ID] a1B2c3D4e [ARGS] {json.dumps(NOTE)}",
}


@pytest.mark.parametrize("said", PASTES.values(), ids=PASTES.keys())
def test_a_call_pasted_in_another_form_is_not_taken(said):
    assert calls_in_text(ANSWER, OFFERED) is not None
    assert calls_in_text(ANSWER, OFFERED, quoted=said) is None


def test_a_python_repr_quoting_a_string_of_an_apostrophe_in_double_quotes_is_read():
    call = {"name": "memory", "arguments": {"text": "it's tea"}}
    answer = f"<tool_call>{json.dumps(call)}</tool_call>"
    assert repr(call).endswith("""{'text': "it's tea"}}""")
    assert calls_in_text(answer, OFFERED, quoted=f"why {call!r}?") is None


def test_the_model_writing_the_composed_form_of_a_decomposed_paste_or_the_other_way_is_not_taken():
    nfd = unicodedata.normalize("NFD", ANSWER)
    assert nfd != ANSWER
    assert calls_in_text(nfd, OFFERED, quoted=f"why? {json.dumps(CALL, ensure_ascii=False)}") is None
    # Keys that sort apart by form: "é" composed sorts after "f", decomposed ("e" and its accent) before.
    arguments = {"é": 1, "f": 2}
    answer = f'<tool_call>{json.dumps({"name": "memory", "arguments": arguments})}</tool_call>'
    said = unicodedata.normalize("NFD", json.dumps({"name": "memory", "arguments": arguments}, ensure_ascii=False))
    assert calls_in_text(answer, OFFERED, quoted=said) is None


OTHER = {**NOTE, "text": "likes cafe au lait"}
STILL_RUNS = {
    # what the user wrote, to which the model answered with its own call, ANSWER: it runs
    "escaped-other-arguments": _escaped(json.dumps({"name": "memory", "arguments": OTHER})),
    "python-other-arguments": repr({"name": "memory", "arguments": OTHER}),
    "python-integer-as-float": repr({"name": "memory", "arguments": {**NOTE, "weight": 2.0}}),
    "python-true-for-one": repr({"name": "memory", "arguments": {**NOTE, "pinned": 1}}),
    "html-other-arguments": html.escape(json.dumps({"name": "memory", "arguments": OTHER})),
    "escaped-definition": _escaped(json.dumps({"name": "memory", "description": "Keeps notes"})),
    "python-definition": repr({"name": "memory", "description": "Keeps notes", "parameters": {"type": "object"}}),
    "html-definition": html.escape(json.dumps({"name": "memory", "description": "Keeps notes"})),
    "naming-the-tool": "use memory [ARGS] to note that I like café au lait",
    "python-huge-integer": "{'name': 'memory', 'arguments': {'weight': " + "9" * 5_000 + "}}",
    "python-set-and-tuple": "{'memory', 'web_search'} and {'name': ('memory',), 'arguments': {1, 2}}",
    "nfd-other-text": unicodedata.normalize("NFD", json.dumps({"name": "memory", "arguments": OTHER})),
    "mistral-spaced-other": f"it wrote memory [ARGS] {json.dumps(OTHER)}",
}


@pytest.mark.parametrize("said", STILL_RUNS.values(), ids=STILL_RUNS.keys())
def test_the_models_own_call_still_runs(said):
    assert calls_in_text(ANSWER, OFFERED, quoted=said) == (None, [("memory", json.dumps(NOTE, ensure_ascii=False))])


_FORMS = {
    "json": lambda call, rng: json.dumps(call, ensure_ascii=rng.random() < 0.5),
    "python": lambda call, rng: repr(call),
    "escaped": lambda call, rng: _escaped(json.dumps(call, ensure_ascii=rng.random() < 0.5)),
    "escaped-twice": lambda call, rng: _escaped(json.dumps(call), times=2),
    "html": lambda call, rng: html.escape(json.dumps(call, ensure_ascii=False)),
    "nfd": lambda call, rng: unicodedata.normalize("NFD", json.dumps(call, ensure_ascii=False)),
    "mistral-spaced": lambda call, rng: f"{call['name']} [ARGS] {json.dumps(call['arguments'])}",
}

# Python writes infinity as inf, a name: no literal, it is not read.
_leaves = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=6))
_arguments = st.dictionaries(st.text(max_size=4), st.recursive(
    _leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8), max_size=4)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(OFFERED)), arguments=_arguments, other=_arguments,
       form=st.sampled_from(sorted(_FORMS)), seed=st.integers(0, 2**32), before=st.text(max_size=12),
       after=st.text(max_size=12))
def test_a_call_pasted_in_any_form_is_never_taken_and_one_with_other_arguments_always_is(
        name, arguments, other, form, seed, before, after):
    rng = random.Random(seed)
    said = f"{before} {_FORMS[form]({'name': name, 'arguments': arguments}, rng)} {after}"

    def answer(arguments):
        return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"

    assert calls_in_text(answer(arguments), OFFERED, quoted=said) is None

    def canonical(value):  # composed, keys that then are one kept once
        return json.dumps(json.loads(unicodedata.normalize("NFC", json.dumps(value, ensure_ascii=False))),
                          sort_keys=True)

    if canonical(other) != canonical(arguments):
        assert calls_in_text(answer(other), OFFERED, quoted=said) is not None


LONG_PASTES = {
    # a message of about 1 MB made to be slow in the forms read here: read in time, whatever it is taken for
    "escaped-quoted-braces": '{\\"' * 330_000,
    "escaped-twice-quoted-braces": '{\\\\\\"' * 160_000,
    "escaped-quotes": '\\"' * 500_000,
    "escaped-calls": _escaped(json.dumps({"name": "memory", "arguments": {"n": 1}}) + " ") * 16_000,
    "python-braces": "{'" * 500_000,
    "python-left-open": "{'a': [" * 140_000,
    "python-nested-open": "{'a': {'b': " * 80_000,
    "python-strings-left-open": "{'a': '" * 140_000,
    "python-small-dicts": "{'a': 1} " * 110_000,
    "python-calls": "{'name': 'memory', 'arguments': {'n': 1}} " * 23_000,
    "html-quoted-braces": "{&quot;" * 140_000,
    "html-ampersands": "&amp;quot;{" * 90_000,
    "nfd-nested-calls": " ".join(['{"name":"memory","arguments":' * 800 + '{"t":"e\u0301"}' + "}" * 800] * 36),
}


@pytest.mark.parametrize("said", LONG_PASTES.values(), ids=LONG_PASTES.keys())
def test_a_long_paste_in_these_forms_is_read_in_time(said):
    started = time.perf_counter()
    calls_in_text(ANSWER, OFFERED, quoted=said)
    assert time.perf_counter() - started < 3
