"""Compaction's trigger counts the tools' schemas every request carries: the gateway's built-in ones come to about
1,200 estimated tokens (delegate_task's alone 700), and on a small window they passed the window before the
messages reached the trigger, so the server refused a request each cycle before the conversation was compacted."""

import json

from aiohttp import web

from agent._compaction import SUMMARY_PROMPT
from agent.testing import FakeOpenAIServer
from gateway.testing import RecordingAdapter, make_config
from tests.gateway.wire import ask, openai_model, system_prompt

WINDOW = 4_096


class ServerCountingTools(FakeOpenAIServer):
    """Refuses, as OpenAI does, a request whose messages and tool schemas come to more than `WINDOW` tokens (a
    character of their JSON a quarter token, as the fake's ``usage`` counts)."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: list[int] = []

    def _over_context_window(self, body):
        tokens = (len(json.dumps(body["messages"])) + len(json.dumps(body.get("tools") or []))) // 4
        if tokens <= WINDOW:
            return None
        self.refused.append(tokens)
        error = {"message": f"This model's maximum context length is {WINDOW} tokens. However, your messages "
                            f"resulted in {tokens} tokens. Please reduce the length of the messages.",
                 "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}
        return web.json_response({"error": error}, status=400)


async def test_a_chat_on_a_small_window_is_compacted_before_the_server_refuses_it(tmp_path, gateways):
    server = ServerCountingTools()
    await server.start()
    try:
        chat = RecordingAdapter()
        config = make_config(tmp_path, model=openai_model(server, context_window=WINDOW),
                             compression={"threshold": 0.75})
        gateway = await gateways(config, [chat])
        for turn in range(12):
            assert await ask(chat, gateway, f"note {turn}: " + "the pump logs a fault at start. " * 50) == "ok"
        await gateway.stop(grace=0)
    finally:
        await server.close()
    parents = [body for body in server.requests if system_prompt(body) != SUMMARY_PROMPT]
    assert "delegate_task" in json.dumps(parents[0]["tools"])  # the built-in tools, sent with every request
    assert len(server.requests) - len(parents) >= 2  # compacted, more than once
    assert server.refused == []  # each time before the window, never after a refusal
