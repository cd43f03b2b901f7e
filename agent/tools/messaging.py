"""The ``messaging`` toolset: send a message to the user's chat (or another target).

The gateway supplies ``ctx.services["send_message"]``, an async callable
``(text, target) -> str | None``; ``target`` is ``None`` for "the chat this session
belongs to", and the gateway decides what other targets mean and which are allowed.
What it returns (e.g. a delivery note) is passed on to the model. One turn sends at most
`MAX_MESSAGES_PER_TURN` (`agent.tools._per_turn`); a call the host refuses with a `ToolError`
(nothing sent) does not count.
"""

from __future__ import annotations

import inspect
from typing import Any

from agent._errors import ToolError
from agent._tools import Tool, ToolContext
from agent.tools._per_turn import TurnBudget

NOT_AVAILABLE = "Messaging is not available in this session."
MAX_MESSAGES_PER_TURN = 30
"""Messages one turn may send: a progress note every few steps of a long turn is a handful; a model
sending one in each of its answers, in a loop, could send hundreds to the chat."""
TOO_MANY = (f"This turn has sent {MAX_MESSAGES_PER_TURN} messages already, the most one turn may send; "
            "nothing was sent. Say the rest in your final answer.")
_BUDGET = TurnBudget(MAX_MESSAGES_PER_TURN)


async def send_message(args: dict[str, Any], ctx: ToolContext) -> str:
    send = ctx.services.get("send_message")
    if send is None:
        raise ToolError(NOT_AVAILABLE)
    if not _BUDGET.take(ctx):
        raise ToolError(TOO_MANY)
    try:
        result = send(args["text"], args.get("target"))
        if inspect.isawaitable(result):  # tolerate a plain function from a simple host
            result = await result
    except ToolError:  # the host's word that nothing was sent (an empty text, a stopped turn)
        _BUDGET.give_back(ctx)
        raise
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
        f"send to the current chat. At most {MAX_MESSAGES_PER_TURN} messages a turn."
    )
    return (Tool("send_message", description, parameters, send_message, "messaging"),)
