"""A memory search looks for each word of its query in every note: a query as long as a model's answer
held a worker thread and its turn for seconds. It is refused past `MAX_QUERY_CHARS`, saying so."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent._errors import ToolError
from agent.tools import memory as memory_module
from agent.tools.memory import MAX_QUERY_CHARS, memory_toolset

(MEMORY,) = memory_toolset()


@pytest.fixture
def services(tmp_path: Path) -> dict[str, Path]:
    return {"memory_path": tmp_path / "state" / "memory.json"}


async def test_a_query_past_the_limit_is_refused_naming_it_and_the_notes_stay(call, services):
    await call(MEMORY, {"action": "add", "text": "Alice likes tea"}, services)
    with pytest.raises(ToolError) as refused:
        await call(MEMORY, {"action": "search", "query": "tea " * 100_000}, services)
    assert str(refused.value) == (f"the query has {len('tea ' * 100_000) - 1} characters; a search query may have "
                                  f"at most {MAX_QUERY_CHARS}")
    assert await call(MEMORY, {"action": "list"}, services) == "[1] Alice likes tea"


async def test_a_query_at_the_limit_is_searched(call, services):
    await call(MEMORY, {"action": "add", "text": "Alice likes tea"}, services)
    query = ("tea " * MAX_QUERY_CHARS)[:MAX_QUERY_CHARS]
    assert await call(MEMORY, {"action": "search", "query": query}, services) == "[1] Alice likes tea"
    # Spaces around it are not counted: they are no part of any word looked for.
    assert await call(MEMORY, {"action": "search", "query": f"   {query}   "}, services) == "[1] Alice likes tea"


async def test_the_limit_is_told_to_the_model_in_the_tools_description():
    assert f"at most {MAX_QUERY_CHARS} characters" in MEMORY.description
    assert memory_module.MAX_QUERY_CHARS == 1000  # as docs/agent.md says
