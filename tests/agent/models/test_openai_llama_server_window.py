"""llama-server's refusal of a request too long for its window ("the request exceeds the available context size,
try increasing it"), which names the window only in its `n_ctx` field: OpenAIModel against FakeOpenAIServer."""

from __future__ import annotations

from agent import AgentSession, CompactionPolicy, Compactor
from agent._context_window import context_window
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer


def chat(n: int) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}: " + "words " * 300}
            for i in range(n)]


async def test_the_window_llama_server_names_in_n_ctx_is_learned_so_later_sessions_compact_before_a_refusal():
    async with FakeOpenAIServer(context_window=2048, context_refusal="llama.cpp", default_text="fine") as server:
        model = OpenAIModel(ModelSettings(provider="openai", name="qwen2.5:7b", base_url=server.base_url,
                                          max_retries=0), env={})
        try:
            first = AgentSession(model=model, compactor=Compactor(CompactionPolicy()))
            first.messages.extend(chat(10))
            # Unread, the window was taken for half the refused request, more than 2048: the summariser's request
            # and the compacted one were refused too, and the turn ended as a conversation grown too long (/new).
            assert (await first.run_turn("next")).exit_reason == "completed"
            assert context_window(model) == 2048
            later = AgentSession(model=model, compactor=Compactor(CompactionPolicy()))
            later.messages.extend(chat(10))
            asked = len(server.requests)
            assert (await later.run_turn("next")).exit_reason == "completed"
            assert len(server.requests) - asked == 2  # its summary and its answer: nothing refused first
        finally:
            await model.aclose()
