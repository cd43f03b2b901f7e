"""A conversation as strict chat templates take it: user and assistant turns alternating.

The transcript may hold two user messages in a row: the summary compaction writes followed by a
message the user wrote, a user message whose turn failed before the model answered followed by
the next one, a steer note after the message it steers. OpenAI takes that, but the chat templates
of many models served by vLLM or llama.cpp (Mistral, Mixtral, Devstral, Gemma, Llama 2) raise
"… conversation roles must alternate user/assistant/user/assistant/..." on it, so every later
request of the chat failed. Mistral's templates that know tools leave tool results and assistant
messages with tool calls out of that check, so a user message after tool results whose turn ended
before the model answered (a /stop, an error) is a second user message in a row too.

Merging is what permissive templates do anyway when they render adjacent user turns, so what
the model reads is the same on every server; the stored transcript is left as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

NO_ANSWER = "[no answer: the turn ended before it]"
"""The assistant message sent between the tool results of a turn that ended before the model
answered and the user message that follows them."""


def alternating(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``messages`` as they are sent: adjacent user messages become one (texts joined by a blank
    line, content-part lists concatenated in order, a text before parts as a text part), and a
    `NO_ANSWER` assistant message goes before a user message that follows tool results when the
    last message the template checks (neither a tool result nor an assistant message with tool
    calls) is a user message. Nothing is reordered; system, assistant and tool messages pass as
    they are, and so does every message where nothing needs to change (the same objects)."""
    sent: list[Mapping[str, Any]] = []
    last_checked: str | None = None  # role of the last message a strict template checks
    for message in messages:
        role = message.get("role")
        if role == "user" and sent:
            previous = sent[-1]
            if previous.get("role") == "user":
                sent[-1] = {**previous, "content": _joined(previous.get("content"), message.get("content"))}
                continue
            if previous.get("role") == "tool" and last_checked == "user":
                sent.append({"role": "assistant", "content": NO_ANSWER})
        sent.append(message)
        if role != "tool" and message.get("tool_calls") is None:
            last_checked = role
    return sent


def _joined(first: Any, second: Any) -> str | list[Any]:
    if isinstance(first, str) and isinstance(second, str):
        return f"{first}\n\n{second}"
    return [*_parts(first), *_parts(second)]


def _parts(content: Any) -> list[Any]:
    if isinstance(content, list):
        return content
    return [{"type": "text", "text": "" if content is None else str(content)}]
