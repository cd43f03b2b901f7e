"""A parent model that asks the user a question (the ``clarify`` tool) before it answers, for the
tests of questions through the gateway and over a platform."""

from __future__ import annotations

from agent import ModelRequest

CHOICES = ["staging", "production"]


def asking_parent(request: ModelRequest) -> dict:
    """Asks once, then answers with what the tool returned."""
    last = request.messages[-1]
    if last["role"] == "tool":
        return {"text": f"deploying to: {last['content']}"}
    if last["role"] == "user" and "deploy" in str(last["content"]):
        return {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?",
                                                                  "choices": CHOICES}}]}
    return {"text": f"plain answer to {last['content']}"}
