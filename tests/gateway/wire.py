"""Playing the model over the OpenAI wire: what a request body says, and replies that drive a
parent and its children through the real tool loop (see `agent.testing.FakeOpenAIServer.respond_with`)."""

from __future__ import annotations

import json
from typing import Any

from gateway.testing import RecordingAdapter, settled

SUBAGENT = "You are a subagent"


def openai_model(server, name: str = "parent-model", **extra: Any) -> dict[str, Any]:
    """``model:`` settings that point the openai provider at a fake server, without retries."""
    return {"provider": "openai", "base_url": server.base_url, "name": name, "max_retries": 0, **extra}


async def ask(chat: RecordingAdapter, gateway, text: str) -> str:
    """Say ``text`` in ``chat`` and return the reply the gateway sends it, once the gateway has settled."""
    replies = len(chat.texts("reply"))
    await chat.say(text)
    await chat.wait_for(lambda: len(chat.texts("reply")) > replies)
    await settled(gateway)
    return chat.texts("reply")[-1]


def system_prompt(body: dict) -> str:
    first = body["messages"][0]
    return first["content"] if first["role"] == "system" else ""


def is_child(body: dict) -> bool:
    return SUBAGENT in system_prompt(body)


def goal(body: dict) -> str:
    """A child's goal, from its system prompt."""
    return system_prompt(body).split("YOUR TASK:\n", 1)[1].split("\n\n", 1)[0]


def tool_names(body: dict) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


def delegate_parameters(body: dict) -> dict:
    (tool,) = [t for t in body.get("tools") or [] if t["function"]["name"] == "delegate_task"]
    return tool["function"]["parameters"]


def tool_results(body: dict) -> list[Any]:
    """Every tool result the request carries, JSON-decoded where it is JSON."""
    out = []
    for message in body["messages"]:
        if message["role"] == "tool":
            try:
                out.append(json.loads(message["content"]))
            except ValueError:
                out.append(message["content"])
    return out


def call(name: str, arguments: dict) -> dict:
    return {"tool_calls": [{"name": name, "arguments": json.dumps(arguments)}]}


def parent_delegating(arguments: dict, *, final: str = "all done", children=None):
    """A responder: the parent calls delegate_task with ``arguments`` on a user message and
    answers ``final`` once the tool result is in; ``children(body)`` answers child requests
    (default: "done: <goal>")."""

    def play(body: dict) -> dict:
        if is_child(body):
            return children(body) if children is not None else {"text": f"done: {goal(body)}"}
        if body["messages"][-1]["role"] == "tool":
            return {"text": final}
        return call("delegate_task", arguments)

    return play


def parent_requests(server) -> list[dict]:
    return [b for b in server.requests if isinstance(b, dict) and not is_child(b)]


def child_requests(server) -> list[dict]:
    return [b for b in server.requests if isinstance(b, dict) and is_child(b)]
