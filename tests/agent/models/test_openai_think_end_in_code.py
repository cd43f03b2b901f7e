"""An answer showing a lone ``</think>`` on a line of its own inside a code block (a model asked about the tags
DeepSeek-R1's distills write) is the answer, not reasoning to drop up to that line. The real SDK over loopback."""

from __future__ import annotations

from agent import AgentSession
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer

KEY = "sk-test-very-secret-0123456789"
SHOWN = "The reasoning ends on a line of its own:\n```\n</think>\n```\nWhat follows it is the answer."


async def test_a_lone_end_tag_shown_in_a_code_block_keeps_the_whole_answer():
    async with FakeOpenAIServer(api_key=KEY) as server:
        server.push_text(SHOWN)
        model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key=KEY,
                                          timeout_seconds=5.0, max_retries=0), env={})
        try:
            # It was cut to "```\nWhat follows it is the answer.": the start of the answer read as reasoning.
            assert (await AgentSession(model=model).run_turn("how does R1 end its reasoning?")).text == SHOWN
        finally:
            await model.aclose()
