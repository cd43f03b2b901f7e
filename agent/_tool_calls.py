"""Tool calls as conversation messages: the assistant message that carries them, their
arguments as the model sent them, and the answer each call a turn did not run gets."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from agent._model import ModelResponse, ToolCall
from agent._tools import utf8_text

NOT_RUN = "[not run: the turn ended before it ran]"
"""The result of a tool call a turn ended without running by an exception (a failing observer or
host): every call is answered, or the server refuses each later request of the conversation."""


def _answer_open_calls(messages: list[dict[str, Any]]) -> None:
    """Answer with `NOT_RUN` each call of the last assistant message that has no result yet."""
    index = len(messages) - 1
    while index >= 0 and messages[index].get("role") == "tool":
        index -= 1
    calls = messages[index].get("tool_calls") if index >= 0 and messages[index].get("role") == "assistant" else None
    if not calls:
        return
    answered = {m.get("tool_call_id") for m in messages[index + 1:]}
    messages.extend({"role": "tool", "tool_call_id": c["id"], "content": NOT_RUN}
                    for c in calls if c["id"] not in answered)


def _unique_ids(calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    """``calls`` (one answer's), each id that an earlier call of theirs has too replaced by one none has:
    ``call_1`` by ``call_1_2``, a Mistral-style id of nine letters and digits by another such (its end
    replaced by a number). Some OpenAI-compatible servers number each answer's calls alike or give them
    all one id; kept, two results answered one id, the model could not tell which result was which call's,
    and a call a turn ended before running counted as answered by the other's result (`_answer_open_calls`)
    and was left unanswered, which the server refuses in every later request. The same tuple when the ids
    are unique already, as they nearly always are."""
    ids = {c.id for c in calls}
    if len(ids) == len(calls):
        return calls
    seen: set[str] = set()
    unique = []
    # Each id's numbering goes on from its last number: counted from 2 every time, thousands of calls
    # sharing one id (a model caught in a loop) took quadratic time, and held the event loop for seconds.
    next_number: dict[str, int] = {}
    for call in calls:
        if call.id in seen:
            number = next_number.get(call.id, 2)
            while (new := _numbered(call.id, number)) in ids:
                number += 1
            next_number[call.id] = number + 1
            ids.add(new)
            call = ToolCall(new, call.name, call.arguments)
        seen.add(call.id)
        unique.append(call)
    return tuple(unique)


def _numbered(call_id: str, number: int) -> str:
    suffix = str(number)
    if len(call_id) == 9 and call_id.isascii() and call_id.isalnum() and len(suffix) < 9:
        return call_id[: 9 - len(suffix)] + suffix  # Mistral's templates refuse any other shape of id
    return f"{call_id}_{suffix}"


def _assistant_with_calls(response: ModelResponse, calls: tuple[ToolCall, ...],
                          parsed: list[tuple[dict[str, Any], str | None]]) -> dict[str, Any]:
    """The assistant message of ``response`` with ``calls`` (its calls, ids made unique by `_unique_ids`),
    each with its arguments as `_kept_arguments` keeps them (``parsed``: `_parse_arguments` of each call's,
    in order) and its name as `_sendable_name` keeps it."""
    message = {
        "role": "assistant",
        "content": response.text or None,
        "tool_calls": [
            {"id": c.id, "type": "function",
             "function": {"name": _sendable_name(c.name),
                          "arguments": _kept_arguments(c.arguments, args, problem)}}
            for c, (args, problem) in zip(calls, parsed, strict=True)
        ],
    }
    if response.reasoning is not None:
        field, text = response.reasoning
        message[field] = text
    return message


def _kept_arguments(raw: str, args: dict[str, Any], problem: str | None) -> str:
    """A call's arguments as the conversation keeps them: always the text of a JSON object, as servers
    that read back a conversation's calls (vLLM parses them for its chat templates) refuse every later
    request of one holding other text. The model's own text when it is an object; the object it holds
    when double-encoded; ``{}`` when empty, or when they could not be used (``problem``: the call ran no
    tool, and its result tells the model why)."""
    if problem is None and raw.lstrip().startswith("{"):
        return raw
    return json.dumps(args, ensure_ascii=False)  # {} when they did not parse


_SENDABLE_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_UNSENDABLE = re.compile(r"[^a-zA-Z0-9_-]")


def _sendable_name(name: str) -> str:
    """A call's tool name as the conversation keeps it: OpenAI refuses every request holding a past call
    whose name is not 1 to 64 letters, digits, ``_`` or ``-``, so a name the model made up
    (``functions.read_file``, one with a space) left the chat refused until /new. Each other character
    becomes ``_`` and the name is cut at 64; the call's id still pairs it with its result, which quotes
    the name as the model wrote it (no tool has it: tool names are checked when registered)."""
    if _SENDABLE_NAME.fullmatch(name):
        return name
    return _UNSENDABLE.sub("_", name)[:64]


def _mend_history(messages: list[dict[str, Any]]) -> tuple[int, int]:
    """Mend, in place, a conversation this code did not write (a stored transcript or a saved turn
    from an older version): each call's arguments as `_kept_arguments` keeps them, its name as
    `_sendable_name` keeps it, and each call no tool result answers answered with `NOT_RUN` after its
    call's results. Older versions kept what the model sent (not JSON, a JSON string or list, a name
    with a dot) and could leave calls unanswered; the server refuses every request of a conversation
    holding any of these, and the chat was stuck for good. A
    mended message is a new dict in the same place; the rest, text included, stay as they are.
    Returns (calls whose arguments or name were mended, calls answered). Once per conversation loaded: it
    parses every call's arguments."""
    mended = answered = 0
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        calls = message.get("tool_calls") if isinstance(message, dict) and message.get("role") == "assistant" else None
        if not isinstance(calls, list) or not calls:
            continue
        kept = [_mended_call(c) for c in calls]
        changed = sum(k is not c for k, c in zip(kept, calls, strict=True))
        if changed:
            messages[index - 1] = {**message, "tool_calls": kept}
            mended += changed
        results = set()
        while index < len(messages) and isinstance(messages[index], dict) and messages[index].get("role") == "tool":
            results.add(messages[index].get("tool_call_id"))
            index += 1
        ids = [c.get("id") for c in kept if isinstance(c, dict)]
        missing = [{"role": "tool", "tool_call_id": i, "content": NOT_RUN}
                   for i in ids if isinstance(i, str) and i not in results]
        messages[index:index] = missing
        index += len(missing)
        answered += len(missing)
    return mended, answered


def _mended_call(call: Any) -> Any:
    """``call`` (a tool call of a stored assistant message), or a copy whose arguments are the text of
    a JSON object (``{}`` when they were none: missing, not JSON, not an object) and whose name is sendable."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return call
    raw = function.get("arguments")
    if isinstance(raw, str):
        kept = _kept_arguments(raw, *_parse_arguments(raw))
    elif isinstance(raw, dict):  # a store that kept the object itself
        try:
            kept = json.dumps(raw, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError):  # ValueError: NaN or Infinity, which JSON has not
            kept = "{}"
    else:
        kept = "{}"
    mended = function if kept is raw else {**function, "arguments": kept}
    name = function.get("name")
    if isinstance(name, str) and _sendable_name(name) is not name:
        mended = {**mended, "name": _sendable_name(name)}
    return call if mended is function else {**call, "function": mended}


CUT_OFF = ("this tool call was cut off at the model's output-length limit, so its arguments are incomplete "
           "and it was not run; send smaller pieces instead (write a long file in parts, a few hundred lines "
           "per call), not the same call again")
"""The error a call gets whose arguments do not parse in an answer cut off at the output-length limit:
"not valid JSON" alone has the model send the same oversized call again, each a full paid answer."""


MAX_NESTING = 100
"""How deep tool arguments may nest (objects and arrays). json parses a good deal deeper than Python
code may then recurse into what it parsed (this module, jsonschema, a hook's ``json.dumps``): a
RecursionError there ended the turn. No tool's arguments need a tenth of this."""


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not allowed in JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range for a number")
    return value


def _loads(text: str) -> Any:
    """``json.loads`` as JSON is written: Python's also reads NaN, Infinity and -Infinity, and makes
    infinity of a number too large (1e999). Kept, they were sent back to the server in the conversation
    as text that is no JSON (json.dumps writes them as read), and a tool got values no JSON can hold."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)


def _parse_arguments(raw: str, *, cut_off: bool = False) -> tuple[dict[str, Any], str | None]:
    """Parse tool-call arguments; models sometimes double-encode them as a JSON string. ``cut_off``:
    the answer they came in was cut off at the output-length limit (`CUT_OFF` when they do not parse)."""
    try:
        value = _loads(raw) if raw.strip() else {}
        if isinstance(value, str):
            value = _loads(value)
    # Model output is untrusted text: json also raises a bare ValueError (an integer past Python's
    # digit limit) and RecursionError (nesting too deep), and neither may escape the turn.
    except (ValueError, RecursionError, AttributeError) as exc:
        return {}, CUT_OFF if cut_off else f"tool arguments are not valid JSON ({exc}); send a JSON object"
    if not isinstance(value, dict):
        return {}, f"tool arguments must be a JSON object, got {type(value).__name__}"
    try:
        return _mended(value, MAX_NESTING), None
    except _TooDeep:
        return {}, f"tool arguments are nested more than {MAX_NESTING} levels deep; send flatter arguments"


class _TooDeep(Exception):
    pass


def _mended(value: Any, depth: int) -> Any:
    """``value`` with each lone surrogate replaced by U+FFFD: JSON's escapes make them (``"\\ud83d"``,
    half of an emoji's pair), and no file, note or request could hold one. Raises `_TooDeep` when
    ``value`` nests more than ``depth`` levels of objects and arrays."""
    if isinstance(value, str):
        return utf8_text(value)
    if isinstance(value, (dict, list)) and depth == 0:
        raise _TooDeep
    if isinstance(value, dict):
        return {utf8_text(k): _mended(v, depth - 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_mended(v, depth - 1) for v in value]
    return value
