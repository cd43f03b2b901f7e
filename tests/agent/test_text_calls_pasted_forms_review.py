"""From review of 328a74bf (Python dicts read by `ast.literal_eval`): a paste of Python data that merely names a
tool (a ``'memory'`` key, a word in a string) is not evaluated, so a large one does not come to the work cap and
refuse the model's own call; `ast.literal_eval`'s warnings for escapes Python does not know (``'\\d'``, a regex)
neither reach the log nor, where warnings are errors, hide the call pasted."""

from __future__ import annotations

import json
import warnings

import pytest

from agent.models._text_tool_calls import calls_in_text

OFFERED = frozenset({"memory", "web_search"})
NOTE = {"action": "add", "text": "likes tea"}
ANSWER = f"<tool_call>{json.dumps({'name': 'memory', 'arguments': NOTE})}</tool_call>"
RUNS = (None, [("memory", json.dumps(NOTE))])

DATA = {
    # a paste of Python data (REPL output, a config), its dicts naming a tool only as a key or a word
    "records-with-a-memory-key": repr([{"host": f"n{i}", "memory": 512, "cpu": 2} for i in range(4_000)]),
    "config-limits": "cfg = " + repr({"services": [{"name": f"s{i}", "limits": {"memory": "1Gi"}}
                                                   for i in range(2_200)]}),
    "log-words": repr([{"level": "info", "msg": f"web_search took {i} ms, memory ok"} for i in range(3_000)]),
}


@pytest.mark.parametrize("said", DATA.values(), ids=DATA.keys())
def test_a_large_python_data_paste_naming_a_tool_does_not_refuse_the_models_call(said):
    assert len(said) > 100_000
    assert calls_in_text(ANSWER, OFFERED, quoted=said) == RUNS


PASTED = {
    "regex-escape": "{'name': 'memory', 'arguments': {'action': 'add', 'text': 'likes tea'}, 'match': '\\d+'}",
    "bytes-escape": "{'name': 'memory', 'arguments': {'action': 'add', 'text': 'likes tea'}, 'raw': b'\\q'}",
}


@pytest.mark.parametrize("said", PASTED.values(), ids=PASTED.keys())
def test_a_pasted_python_call_with_an_unknown_escape_warns_nothing_and_is_known(said):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert calls_in_text(ANSWER, OFFERED, quoted=said) is None
        assert calls_in_text(ANSWER, OFFERED, quoted=said.replace("tea", "coffee")) == RUNS
    assert [str(warning.message) for warning in caught] == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as under pytest's filterwarnings, or python -W error
        assert calls_in_text(ANSWER, OFFERED, quoted=said) is None
