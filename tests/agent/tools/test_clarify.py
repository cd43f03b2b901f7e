from __future__ import annotations

import pytest

from agent._errors import ToolError
from agent.tools.clarify import clarify_toolset

(CLARIFY,) = clarify_toolset()


async def test_asks_the_host(call):
    asked = []

    async def ask(question, choices):
        asked.append((question, choices))
        return "the blue one"

    out = await call(CLARIFY, {"question": "Which?", "choices": ["red", "blue"]}, {"clarify": ask})
    assert out == "the blue one"
    assert await call(CLARIFY, {"question": "Really?"}, {"clarify": ask}) == "the blue one"
    assert asked == [("Which?", ["red", "blue"]), ("Really?", None)]


async def test_empty_answer_is_reported(call):
    async def ask(question, choices):
        return ""

    assert await call(CLARIFY, {"question": "Hm?"}, {"clarify": ask}) == "(the user gave no answer)"


async def test_without_a_user(call):
    with pytest.raises(ToolError) as info:
        await call(CLARIFY, {"question": "Which?"})
    assert str(info.value) == "No user is available to answer a clarifying question; proceed with your best judgement."


@pytest.mark.parametrize(
    "args", [{}, {"question": ""}, {"question": "q", "choices": "a,b"}, {"question": "q", "choices": [1]}]
)
async def test_invalid_arguments(call, args):
    with pytest.raises(ToolError, match="invalid arguments for clarify"):
        await call(CLARIFY, args)
