"""Background results share half of what the parent model's window leaves beside its tools' schemas, as one answer's
results do in compaction, not half of the window: on a 4,096-token window with the built-in tools' 1,200 tokens of
schemas and a summary of the chat before, the completion turn came to more than the window, and with nothing left to
summarise the results were never answered (the chat read that the conversation had grown too long)."""

from agent import ModelRequest
from agent._token_estimate import estimate_tokens, schema_tokens
from agent.models.scripted import ScriptedModel
from gateway.ledger import COMPLETION_PREFIX
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_ledger import BACKGROUND

WINDOW = 4_096


def parent(refused: list[int]):
    """A server that refuses, as a real one does, a request whose messages and tool schemas pass the window."""
    def script(request: ModelRequest) -> dict:
        size = estimate_tokens(request.messages) + schema_tokens(request.tools)
        if size > WINDOW:
            refused.append(size)
            return {"error": "bad_request", "message": f"This model's maximum context length is {WINDOW} tokens"}
        content = str(request.messages[-1].get("content"))
        if request.messages[-1]["role"] != "user":
            return {"text": "on it"}
        if content.startswith(COMPLETION_PREFIX):
            return {"text": "done"}
        if content.startswith("please delegate"):
            return {"tool_calls": [{"name": "delegate_task",
                                    "arguments": {"tasks": [{"goal": f"job {n}"} for n in range(4)]}}]}
        return {"text": "noted"}

    return script


async def test_background_results_fit_beside_the_tools_schemas_on_a_small_window(tmp_path, gateways):
    refused: list[int] = []
    answer = " ".join(["finding"] * 3_000)  # each child's summary: 6,000 tokens, cut to share the budget
    model = ScriptedModel({"parent": parent(refused), "compactor": lambda r: {"text": "summary " * 400},
                           "leaf": lambda r: {"text": answer}}, context_window=WINDOW)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, **BACKGROUND), [chat], model=model)
    for n in range(12):
        await chat.say(f"note {n}: " + "the pump logs a fault at start. " * 30)
        await chat.wait_for(lambda: len(chat.texts()) == n + 1)
    await chat.say("please delegate")
    await chat.wait_for(lambda: len(chat.texts()) == 14)
    await settled(gateway)
    assert chat.texts()[12:] == ["on it", "done"]
    assert refused == []
