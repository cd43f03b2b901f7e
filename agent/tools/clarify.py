"""The ``clarify`` toolset: ask the user a question and wait for the answer.

The host supplies ``ctx.services["clarify"]``, an async callable
``(question, choices) -> str`` (the terminal prompts; a gateway may ask in chat).
Without it — a background child, an unattended run — the tool refuses and tells the
model to carry on by itself. Cancelling the turn cancels the pending question.
"""

from __future__ import annotations

import inspect
from typing import Any

from agent._errors import ToolError
from agent._tools import Tool, ToolContext

NO_USER = "No user is available to answer a clarifying question; proceed with your best judgement."


async def clarify(args: dict[str, Any], ctx: ToolContext) -> str:
    ask = ctx.services.get("clarify")
    if ask is None:
        raise ToolError(NO_USER)
    answer = ask(args["question"], args.get("choices") or None)
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
        "ambiguous enough that guessing would waste work."
    )
    return (Tool("clarify", description, parameters, clarify, "clarify"),)
