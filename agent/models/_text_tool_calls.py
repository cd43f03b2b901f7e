"""Tool calls a server left in an answer's text.

A self-hosted server turns what the model writes into ``tool_calls`` only with a parser that knows the model's
format: vLLM's ``--tool-call-parser`` (hermes for Qwen and Hermes, llama3_json for Llama), Ollama's and LM
Studio's templates. Without one, or with the wrong one, the calls arrive as the answer's ``content``, with
``finish_reason: stop``: ``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` (Qwen, Hermes), a bare
``{"name": …, "parameters": {…}}`` (Llama 3.1), a ```json fence or ``<tools>…</tools>`` (Qwen2.5-Coder), Mistral's
``[TOOL_CALLS][{"name": …, "arguments": {…}}]`` or, from its v11 tokenizer on, ``[TOOL_CALLS]name[ARGS]{…}``. Taken
as the answer, the chat read that JSON as the reply and no tool ran.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
"""Hermes' block; the last may be left open, its end being the model's stop."""

_WRAPPERS = (re.compile(r"<tools>(.*)</tools>", re.DOTALL), re.compile(r"```(?:json)?[ \t]*\n(.*?)\n?```", re.DOTALL))

_PYTHON_TAG = "<|python_tag|>"
"""Llama 3.1's mark before a call, which servers without its parser leave in the text."""

_ARGUMENT_KEYS = ("arguments", "parameters")

_MISTRAL = "[TOOL_CALLS]"
"""The mark Mistral's models begin their calls with; before each, from its v11 tokenizer on."""

_MISTRAL_CALL = re.compile(r"\s*([A-Za-z0-9_.-]+)\[ARGS\]\s*")
"""One call of Mistral's v11 form, after its mark: the tool's name, before its arguments' JSON object."""

_MISTRAL_ID = "id"
"""Mistral Nemo writes each call of the list form with the 9-character id its template sends back."""


def offered_names(tools: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The names of the tools a request offers (OpenAI's ``{"type": "function", "function": {"name"}}``)."""
    names = set()
    for tool in tools:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if isinstance(name, str):
            names.add(name)
    return frozenset(names)


def calls_in_text(text: str, offered: frozenset[str],
                  quoted: str = "") -> tuple[str | None, list[tuple[str, str]]] | None:
    """(what the answer says beside the calls, or None; each call's name and arguments as JSON text) when
    ``text`` holds nothing but calls of ``offered`` tools in one of the forms above (Hermes' blocks may follow
    some words, which are then the answer's text, as vLLM's hermes parser keeps them); else None. A JSON
    example inside an explanation, a name no tool has or JSON that does not parse leaves the answer as text;
    so does a call ``quoted``, the latest user message, holds (spacing aside): the user pasted it to show or ask
    about it, and the model repeating it is no call of its own."""
    if not offered or "{" not in text:
        return None
    text = text.strip()
    said, sources, calls = None, None, None
    start = text.find("<tool_call>")
    if start >= 0:
        said, rest, sources, at = text[:start].strip() or None, text[start:], [], 0
        if said is not None and said.count("```") % 2:  # within a code block left open: an example shown
            return None
        for block in _BLOCK.finditer(rest):
            if rest[at:block.start()].strip():
                return None
            sources.append(block[1])
            at = block.end()
        if rest[at:].strip():
            return None
        calls = _calls(sources, offered)
    elif text.startswith(_MISTRAL):
        sources, calls = _mistral(text, offered)
    else:
        text = text.removeprefix(_PYTHON_TAG).strip()
        for wrapper in _WRAPPERS:
            if (wrapped := wrapper.fullmatch(text)) is not None:
                text = wrapped[1]
                break
        sources = _objects(text)
        calls = _calls(sources, offered)
    if calls is None or _quoted(sources, quoted):
        return None
    return said, calls


def _mistral(text: str, offered: frozenset[str]) -> tuple[list[str], list[tuple[str, str]] | None]:
    """The calls of ``text``, which begins with Mistral's mark, and the text of each (or of their list)."""
    rest = text[len(_MISTRAL):].lstrip()
    if rest.startswith(("[", "{")):  # before its v11 tokenizer: a JSON list of calls
        sources = _objects(rest)
        return sources, _calls(sources, offered, extra_keys=(_MISTRAL_ID,))
    # Read call by call, not split at each mark: an argument's text may hold the mark itself (a note about it).
    decoder, sources, calls, at = json.JSONDecoder(), [], [], 0
    while True:
        call = _MISTRAL_CALL.match(rest, at)
        try:
            arguments, end = decoder.raw_decode(rest, call.end()) if call is not None else (None, at)
        except (ValueError, RecursionError):
            return sources, None
        sources.append(rest[at:end])
        found = _call({"name": call[1], "arguments": arguments}, offered) if isinstance(arguments, dict) else None
        if found is None:
            return sources, None
        calls.append(found)
        at = end
        while at < len(rest) and rest[at].isspace():
            at += 1
        if at == len(rest):
            return sources, calls
        if not rest.startswith(_MISTRAL, at):
            return sources, None
        at += len(_MISTRAL)


def _quoted(sources: list[str], quoted: str) -> bool:
    """Whether ``quoted`` holds any call of ``sources``, the model's calls as it wrote them (a list's each item),
    whitespace aside: the model may lay out again what it repeats, or list a call the user pasted alone."""
    if not quoted:
        return False
    holds = "".join(quoted.split())
    return any("".join(item.split()) in holds for source in sources for item in _items(source))


def _items(source: str) -> list[str]:
    """The text of each item of ``source``, a JSON list; ``source`` itself when it is none."""
    decoder, items, text = json.JSONDecoder(), [], source.strip()
    if not text.startswith("["):
        return [text]
    at = 1
    while True:
        while at < len(text) and (text[at].isspace() or text[at] == ","):
            at += 1
        if at >= len(text) or text[at] == "]":
            return items
        try:
            _, at_end = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            return [text]
        items.append(text[at:at_end])
        at = at_end


def _objects(text: str) -> list[str]:
    """``text`` as the JSON values it holds one after another (Llama writes several calls apart by ``;`` or a
    space), each as its text; a single item of text that is no JSON when they cannot be told apart."""
    decoder, values, at, text = json.JSONDecoder(), [], 0, text.strip()
    while at < len(text):
        try:
            _, end = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            return [text]
        values.append(text[at:end])
        at = end
        while at < len(text) and (text[at].isspace() or text[at] == ";"):
            at += 1
    return values


def _calls(bodies: list[str], offered: frozenset[str],
           extra_keys: tuple[str, ...] = ()) -> list[tuple[str, str]] | None:
    calls: list[tuple[str, str]] = []
    for body in bodies:
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            return None
        for item in value if isinstance(value, list) else [value]:
            call = _call(item, offered, extra_keys)
            if call is None:
                return None
            calls.append(call)
    return calls or None


def _call(item: Any, offered: frozenset[str], extra_keys: tuple[str, ...] = ()) -> tuple[str, str] | None:
    if not isinstance(item, dict) or not set(item) <= {"name", *_ARGUMENT_KEYS, *extra_keys}:
        return None
    if not isinstance(item.get("name"), str) or item["name"] not in offered:  # a list or object is no set member
        return None
    arguments = next((item[key] for key in _ARGUMENT_KEYS if key in item), None)
    if arguments is None:  # none written, or null, as some templates write for a tool without parameters
        arguments = {}
    if isinstance(arguments, dict):
        return item["name"], json.dumps(arguments, ensure_ascii=False)
    if isinstance(arguments, str):  # as the API writes them: the session parses them, and says what is wrong
        return item["name"], arguments
    return None
