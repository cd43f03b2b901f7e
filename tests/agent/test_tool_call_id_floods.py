"""Thousands of tool calls in one answer that share one id (a model caught in a loop, behind a server that
numbers every answer's calls alike): each gets an id of its own, in time linear in their number."""

import pytest

from agent import _tool_calls
from agent._model import ToolCall
from agent._tool_calls import _unique_ids


@pytest.mark.parametrize("call_id", ["call_1", "aB3dE6gH9"], ids=["openai-style", "mistral-style"])
def test_calls_sharing_one_id_are_numbered_without_trying_every_number_again(call_id, monkeypatch):
    tried = []
    numbered = _tool_calls._numbered
    monkeypatch.setattr(_tool_calls, "_numbered", lambda *a: tried.append(a) or numbered(*a))
    calls = (ToolCall(f"{call_id}_3", "echo", "{}"),
             *(ToolCall(call_id, "echo", "{}") for _ in range(3000)))
    ids = [c.id for c in _unique_ids(calls)]
    assert len(set(ids)) == len(ids)
    # Counted from 2 for each twin, the numbers tried came to 4.5 million (20 s of a blocked event loop for
    # 10,000 calls): each twin now goes on from the last number its id took.
    assert len(tried) < 2 * len(calls)
    if call_id == "call_1":
        assert ids[:5] == ["call_1_3", "call_1", "call_1_2", "call_1_4", "call_1_5"]
    else:
        assert ids[1:4] == ["aB3dE6gH9", "aB3dE6gH2", "aB3dE6gH3"]
