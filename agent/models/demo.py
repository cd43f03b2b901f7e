"""The offline demo model: the embedded default, so a newcomer can try delegation
with no API key. Every reply says it comes from the demo.

As a parent, a message holding a list (``- ``, ``* `` or ``1. `` lines) becomes one
``delegate_task`` call with a task per item and the rest of the message as shared
context; results become one line per task, and a refused call (a list longer than
``delegation.max_concurrent_children``) is answered with the tool's own error. As a child it takes
``model.demo.child_steps`` real tool calls, pausing ``step_seconds`` each, then
reports. Goal markers: ``[fail]`` fails the model call, ``[stall]`` hangs with no
activity until interrupted, ``[slow:N]`` takes N steps.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agent._errors import ModelError
from agent._model import ModelRequest, ModelResponse, ToolCall, Usage
from agent.settings import DemoModelSettings

DEMO_TAG = "[demo]"
_LIST_ITEM = re.compile(r"^\s*(?:[-*]|\d+[.)])\s+(.+?)\s*$")
_SLOW = re.compile(r"\[slow:(\d+)\]")
#: Tools a demo child may call without side effects, in order of preference.
_HARMLESS_TOOLS = ("list_files", "read_file")
_CHILD_ROLES = frozenset({"leaf", "orchestrator"})

EXPLANATION = (
    f"{DEMO_TAG} I am Switchboard's offline demo model, not a real LLM. "
    "Send me a list (lines starting with '- ', '* ' or '1. ') and I will hand each item "
    "to a subagent and report back. For real answers, set `model.provider: openai` with "
    "`model.base_url`, `model.name` and `model.api_key` (or $OPENAI_API_KEY) in switchboard.yaml."
)


def split_list(text: str) -> tuple[list[str], str]:
    """The list items of a message and the remaining lines (the shared context)."""
    items, rest = [], []
    for line in text.splitlines():
        m = _LIST_ITEM.match(line)
        if m:
            items.append(m.group(1))
        else:
            rest.append(line)
    return items, "\n".join(rest).strip()


class DemoModel:
    def __init__(self, settings: DemoModelSettings = DemoModelSettings(), *, name: str = "demo") -> None:
        self.name = name
        self.context_window = 128_000
        self.supports_vision = False
        self.settings = settings
        self._seq = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.role == "compactor":
            count = request.metadata.get("message_count", "?")
            return self._text(f"{DEMO_TAG} summary of {count} earlier messages")
        if request.role in _CHILD_ROLES:
            return await self._child(request)
        return self._parent(request)

    # -- parent ------------------------------------------------------------------------

    def _parent(self, request: ModelRequest) -> ModelResponse:
        last = request.messages[-1] if request.messages else {}
        results = _delegation_results(last)
        if results is not None:
            return self._text(_answer_for(results, _delegated_goals(request.messages)))
        refused = _refusal(last)
        if refused is not None:
            # Say what went wrong; the explanation of lists would hide it (a list of 11 is still a list).
            return self._text(f"{DEMO_TAG} delegate_task refused the list: {refused}")
        text = _text_of(last.get("content")) if last.get("role") == "user" else ""
        items, context = split_list(text)
        if items and _has_tool(request.tools, "delegate_task"):
            tasks = [{"goal": item, "context": context} if context else {"goal": item} for item in items]
            return self._calls(("delegate_task", {"tasks": tasks}))
        if items:
            return self._text(f"{EXPLANATION}\n(Delegation is not available in this session, so I cannot run the list.)")
        return self._text(EXPLANATION)

    # -- child -------------------------------------------------------------------------

    async def _child(self, request: ModelRequest) -> ModelResponse:
        goal = str(request.metadata.get("goal") or _first_user_text(request.messages))
        if "[fail]" in goal:
            raise ModelError("demo model failure requested by the [fail] marker", kind="demo")
        if "[stall]" in goal:
            await asyncio.Event().wait()  # silent until interrupted: what liveness must catch
        slow = _SLOW.search(goal)
        steps = int(slow.group(1)) if slow else self.settings.child_steps
        tool = next((t for t in _HARMLESS_TOOLS if _has_tool(request.tools, t)), None)
        if request.iteration < steps and tool is not None:
            await asyncio.sleep(self.settings.step_seconds)
            args = {"path": "."} if tool == "list_files" else {"path": "README.md"}
            return self._calls((tool, args))
        if tool is None and steps:
            await asyncio.sleep(self.settings.step_seconds * steps)
        return self._text(f"{DEMO_TAG} Done: {goal} ({steps} demo steps; a real model would do the work here).")

    # -- helpers -----------------------------------------------------------------------

    def _text(self, text: str) -> ModelResponse:
        return ModelResponse(text=text, usage=Usage(0, 0), model=self.name)

    def _calls(self, *calls: tuple[str, dict[str, Any]]) -> ModelResponse:
        out = []
        for name, args in calls:
            self._seq += 1
            out.append(ToolCall(id=f"demo_{self._seq}", name=name, arguments=json.dumps(args)))
        # No commentary text with the call: a background turn is exactly one ack and one result.
        return ModelResponse(text=None, tool_calls=tuple(out), usage=Usage(0, 0), model=self.name)


def _has_tool(tools: Sequence[Mapping[str, Any]], name: str) -> bool:
    return any(t.get("function", {}).get("name") == name for t in tools)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _first_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    return next((_text_of(m.get("content")) for m in messages if m.get("role") == "user"), "")


def _delegation_results(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """The delegate_task payload in a tool result or a background-completion message."""
    content = _text_of(message.get("content"))
    start = content.find("{")
    if start < 0 or message.get("role") not in ("tool", "user"):
        return None
    try:
        payload, _ = json.JSONDecoder().raw_decode(content[start:])
    except json.JSONDecodeError:
        return None
    if isinstance(payload, dict) and ("results" in payload or payload.get("status") == "dispatched"):
        return payload
    return None


def _refusal(message: Mapping[str, Any]) -> str | None:
    """The error text of a tool result that is one (``Error: ...``), else None."""
    if message.get("role") != "tool":
        return None
    content = _text_of(message.get("content")).strip()
    return content.removeprefix("Error:").strip() if content.startswith("Error:") else None


def _delegated_goals(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Goals of the most recent delegate_task call, to name each task in the answer."""
    for message in reversed(messages):
        for call in message.get("tool_calls") or ():
            if call.get("function", {}).get("name") != "delegate_task":
                continue
            try:
                args = json.loads(call["function"].get("arguments") or "{}")
            except json.JSONDecodeError:
                return []
            tasks = args.get("tasks") or ([args] if args.get("goal") else [])
            return [str(t.get("goal", "")) for t in tasks if isinstance(t, dict)]
    return []


def _answer_for(payload: Mapping[str, Any], goals: Sequence[str]) -> str:
    if payload.get("status") == "dispatched":
        goals = payload.get("goals") or []
        return f"{DEMO_TAG} Started {len(goals)} subagent(s); I will report back when they finish."
    results = payload.get("results", [])
    # Background results carry their own goals, one per result in the same order (a /retry keeps the original
    # task indexes of the few it runs again): the latest call may be another list's, dispatched meanwhile.
    own = payload.get("goals")
    lines = [f"{DEMO_TAG} Results:"]
    for position, entry in enumerate(results):
        index = entry.get("task_index")
        if isinstance(own, list) and len(own) == len(results):
            named = own[position]
        else:
            named = goals[index] if isinstance(index, int) and 0 <= index < len(goals) else None
        goal = entry.get("goal") or named or f"task {index}"
        outcome = entry.get("summary") if entry.get("status") == "completed" else entry.get("error") or entry.get("summary")
        lines.append(f"- {goal}: {entry.get('status', 'unknown')} — {outcome or 'no output'}")
    return "\n".join(lines)
