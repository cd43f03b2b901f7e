from __future__ import annotations

import pytest

from agent._errors import ToolError
from agent.tools.messaging import messaging_toolset

(SEND,) = messaging_toolset()


async def test_sends_through_the_gateway(call):
    sent = []

    async def send_message(text, target):
        sent.append((text, target))
        return "delivered to #ops" if target else None

    assert await call(SEND, {"text": "halfway there"}, {"send_message": send_message}) == "Message sent."
    out = await call(SEND, {"text": "done", "target": "#ops"}, {"send_message": send_message})
    assert out == "delivered to #ops"
    assert sent == [("halfway there", None), ("done", "#ops")]
    assert SEND.toolset == "messaging"


async def test_without_the_service(call):
    with pytest.raises(ToolError, match=r"^Messaging is not available in this session\.$"):
        await call(SEND, {"text": "hi"})


@pytest.mark.parametrize("args", [{}, {"text": ""}, {"text": "hi", "target": 3}, {"text": "hi", "to": "x"}])
async def test_invalid_arguments(call, args):
    with pytest.raises(ToolError, match="invalid arguments for send_message"):
        await call(SEND, args)
