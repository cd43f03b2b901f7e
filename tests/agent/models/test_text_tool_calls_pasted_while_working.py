"""The pasted-call rule reads what the user wrote last, also a message steered in while a tool ran, which the session
writes after the tool's result (``STEER_NOTE``), not as a user message: a call pasted there and echoed stays text (it
ran), and one pasted in the turn's first message runs once a steered message asks for it (it stayed text all turn).
OpenAIModel and the real SDK against FakeOpenAIServer over loopback."""

from __future__ import annotations

import json

from agent._model import ModelRequest
from agent._session import STEER_NOTE
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer

TOOLS = ({"type": "function", "function": {"name": "memory", "parameters": {"type": "object", "properties": {}}}},)
CALL = {"name": "memory", "arguments": {"action": "add", "text": "likes tea"}}
BLOCK = f"<tool_call>\n{json.dumps(CALL)}\n</tool_call>"


async def answer(messages: list[dict]):
    async with FakeOpenAIServer() as server:
        server.push_text(BLOCK)
        model = OpenAIModel(ModelSettings(provider="openai", name="qwen2.5-7b", base_url=server.base_url,
                                          max_retries=0), env={})
        try:
            return await model.complete(ModelRequest(messages=messages, tools=TOOLS))
        finally:
            await model.aclose()


def after_a_tool(first: str, steered: str) -> list[dict]:
    return [
        {"role": "user", "content": first},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "memory", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": f"no notes\n\n{STEER_NOTE}\n{steered}"},
    ]


async def test_a_call_pasted_in_a_message_steered_after_a_tool_result_is_not_run():
    steered = f"My bot printed this instead of doing it, why?\n{BLOCK}"
    response = await answer(after_a_tool("look up the weather", steered))
    assert response.tool_calls == () and response.text == BLOCK


async def test_a_call_pasted_first_runs_once_a_steered_message_asks_for_it():
    response = await answer(after_a_tool(f"what does this do?\n{BLOCK}", "ok, do it now"))
    assert [call.name for call in response.tool_calls] == ["memory"]

