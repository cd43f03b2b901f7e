"""``clarify`` refuses a question the chat could not read as one — only whitespace (a bare "❓" to
answer), or as long as a draft — before the host asks anything, naming what was wrong."""

from __future__ import annotations

import pytest

from agent._errors import ToolError
from agent.tools.clarify import MAX_CHOICE_CHARS, MAX_QUESTION_CHARS, clarify_toolset

(CLARIFY,) = clarify_toolset()


@pytest.fixture
def asked() -> list:
    return []


@pytest.fixture
def services(asked: list) -> dict:
    async def ask(question, choices):
        asked.append((question, choices))
        return "yes"

    return {"clarify": ask}


@pytest.mark.parametrize(("args", "why"), [
    ({"question": " \n\t"}, "the question is only whitespace; nothing was asked"),
    ({"question": "q" * (MAX_QUESTION_CHARS + 1)},
     f"the question has {MAX_QUESTION_CHARS + 1} characters; a question may have at most {MAX_QUESTION_CHARS}"),
    ({"question": "Which?", "choices": ["red", "  "]}, "choice 2 is only whitespace; nothing was asked"),
    ({"question": "Which?", "choices": ["c" * (MAX_CHOICE_CHARS + 1)]},
     f"choice 1 has {MAX_CHOICE_CHARS + 1} characters; a choice may have at most {MAX_CHOICE_CHARS}"),
])
async def test_a_question_the_chat_could_not_read_as_one_is_refused_unasked(call, services, asked, args, why):
    with pytest.raises(ToolError) as refused:
        await call(CLARIFY, args, services)
    assert str(refused.value).startswith(why)
    assert asked == []


async def test_questions_and_choices_within_the_bounds_are_asked(call, services, asked):
    question, choices = "q" * MAX_QUESTION_CHARS, ["c" * MAX_CHOICE_CHARS, "no"]
    assert await call(CLARIFY, {"question": question, "choices": choices}, services) == "yes"
    assert await call(CLARIFY, {"question": " Which? ", "choices": []}, services) == "yes"
    assert asked == [(question, choices), (" Which? ", None)]
