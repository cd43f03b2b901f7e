"""The ``messaging`` toolset: send a message to the user's chat (or another target).

The gateway supplies ``ctx.services["send_message"]``, an async callable
``(text, target) -> str | None``; ``target`` is ``None`` for "the chat this session
belongs to", and the gateway decides what other targets mean and which are allowed.
What it returns (e.g. a delivery note) is passed on to the model.
"""

from __future__ import annotations

import inspect
from typing import Any

from agent._errors import ToolError
from agent._tools import Tool, ToolContext

NOT_AVAILABLE = "Messaging is not available in this session."


async def send_message(args: dict[str, Any], ctx: ToolContext) -> str:
    send = ctx.services.get("send_message")
    if send is None:
        raise ToolError(NOT_AVAILABLE)
    result = send(args["text"], args.get("target"))
    if inspect.isawaitable(result):  # tolerate a plain function from a simple host
        result = await result
    return str(result) if result else "Message sent."


def messaging_toolset() -> tuple[Tool, ...]:
    """The ``send_message`` tool."""
    parameters = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 1},
            "target": {"type": "string", "minLength": 1, "description": "Where to send; omit for the current chat."},
        },
        "required": ["text"],
        "additionalProperties": False,
    }
    description = (
        "Send a message now, before the turn ends — e.g. a progress update. Omit 'target' to "
        "send to the current chat."
    )
    return (Tool("send_message", description, parameters, send_message, "messaging"),)
