"""The ``clarify`` toolset: ask the user a question and wait for the answer.

The host supplies ``ctx.services["clarify"]``, an async callable
``(question, choices) -> str`` (the terminal prompts; a gateway may ask in chat).
Without it — a background child, an unattended run — the tool refuses and tells the
model to carry on by itself. Cancelling the turn cancels the pending question. A question or
choice that shows nothing (only whitespace), or one longer than a question is (`MAX_QUESTION_CHARS`,
`MAX_CHOICE_CHARS`), is refused before the host sees it, naming what was wrong.
"""

from __future__ import annotations

import inspect
from typing import Any

from agent._errors import ToolError
from agent._tools import Tool, ToolContext

NO_USER = "No user is available to answer a clarifying question; proceed with your best judgement."
MAX_QUESTION_CHARS = 2000
"""A question longer than this is no clarifying question: the gateway splits text to the platform's limit,
and a question holding the model's whole draft would reach the chat as a wall of messages to read first."""
MAX_CHOICE_CHARS = 200
"""An offered answer, shown as one item of a numbered list that a number picks."""


def _checked(question: str, choices: list[str] | None) -> tuple[str, list[str] | None]:
    """``question`` and ``choices`` as the host gets them; `ToolError` naming what is wrong with them.
    The schema's ``minLength`` lets ``" "`` through: asked, the chat got a bare "❓" to answer."""
    if question.isspace():
        raise ToolError("the question is only whitespace; nothing was asked. Write the question")
    if len(question) > MAX_QUESTION_CHARS:
        raise ToolError(f"the question has {len(question)} characters; a question may have at most "
                        f"{MAX_QUESTION_CHARS}, nothing was asked. Ask it shorter")
    for number, choice in enumerate(choices or (), 1):
        if choice.isspace():
            raise ToolError(f"choice {number} is only whitespace; nothing was asked. Leave it out")
        if len(choice) > MAX_CHOICE_CHARS:
            raise ToolError(f"choice {number} has {len(choice)} characters; a choice may have at most "
                            f"{MAX_CHOICE_CHARS}, nothing was asked. Shorten it")
    return question, choices or None


async def clarify(args: dict[str, Any], ctx: ToolContext) -> str:
    ask = ctx.services.get("clarify")
    if ask is None:
        raise ToolError(NO_USER)
    answer = ask(*_checked(args["question"], args.get("choices")))
    if inspect.isawaitable(answer):  # tolerate a plain function from a simple host
        answer = await answer
    return str(answer) if answer else "(the user gave no answer)"


def clarify_toolset() -> tuple[Tool, ...]:
    """The ``clarify`` tool."""
    parameters = {
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1},
            "choices": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "maxItems": 10,
                "description": "Suggested answers; the user may still answer freely.",
            },
        },
        "required": ["question"],
        "additionalProperties": False,
    }
    description = (
        "Ask the user a clarifying question and wait for the answer. Use it only when the task is "
        f"ambiguous enough that guessing would waste work. At most {MAX_QUESTION_CHARS} characters, and "
        f"{MAX_CHOICE_CHARS} a choice."
    )
    return (Tool("clarify", description, parameters, clarify, "clarify"),)
