"""A model that replays a script, so tests can drive exact tool-call sequences.

A script maps an agent role (``parent``, ``leaf``, ``orchestrator``, or ``*`` for
any) to a list of turns; each turn is a list of steps consumed one per model call
in that turn. A step is one of::

    {"text": "final answer"}
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}], "text": "optional interim"}
    {"error": "server_error", "message": "boom"}     # raises ModelError
    {"sleep": 0.5, ...}                              # waits, then acts as the rest of the step
    {"wait": "gate", ...}                            # waits until the test calls release("gate")
    {"hang": true}                                   # never answers (until cancelled)

A role's value may also be a callable ``(request) -> step`` for behaviour that
depends on the request (e.g. on a child's goal). When a turn runs out of steps
the model answers ``(script exhausted)`` so a test fails loudly, not by hanging.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from agent._errors import ModelError
from agent._model import ModelRequest, ModelResponse, ToolCall, Usage

Step = Mapping[str, Any]
RoleScript = Sequence[Sequence[Step]] | Callable[[ModelRequest], Step]


class ScriptedModel:
    def __init__(
        self,
        script: Mapping[str, RoleScript] | None = None,
        *,
        name: str = "scripted",
        context_window: int = 128_000,
        supports_vision: bool = False,
        usage: Usage = Usage(10, 5),
        cost_usd: float | None = None,
    ) -> None:
        self.name = name
        self.context_window = context_window
        self.supports_vision = supports_vision
        self.script: dict[str, RoleScript] = dict(script or {})
        self.usage = usage
        self.cost_usd = cost_usd
        self.requests: list[ModelRequest] = []
        self._call_seq = 0
        self._released: dict[str, asyncio.Event] = {}
        self._reached: dict[str, asyncio.Event] = {}

    def release(self, gate: str) -> None:
        """Let every call waiting at ``gate`` (a ``{"wait": gate}`` step) go on, now and later."""
        self._event(self._released, gate).set()

    async def reached(self, gate: str) -> None:
        """Return once some call has arrived at ``gate``."""
        await self._event(self._reached, gate).wait()

    @staticmethod
    def _event(events: dict[str, asyncio.Event], gate: str) -> asyncio.Event:
        return events.setdefault(gate, asyncio.Event())

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> ScriptedModel:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a script is a mapping of role to turns")
        return cls(data, **kwargs)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        step = self._step_for(request)
        if "sleep" in step:
            await asyncio.sleep(float(step["sleep"]))
        if "wait" in step:
            self._event(self._reached, str(step["wait"])).set()
            await self._event(self._released, str(step["wait"])).wait()
        if step.get("hang"):
            await asyncio.Event().wait()
        if "error" in step:
            raise ModelError(str(step.get("message", "scripted failure")), kind=str(step["error"]))
        return ModelResponse(
            text=step.get("text"),
            tool_calls=tuple(self._tool_call(c) for c in step.get("tool_calls", ())),
            usage=self.usage,
            cost_usd=step.get("cost_usd", self.cost_usd),
            model=self.name,
            truncated=bool(step.get("truncated")),
        )

    def _step_for(self, request: ModelRequest) -> Step:
        role_script = self.script.get(request.role, self.script.get("*"))
        if role_script is None and request.role == "compactor":
            return {"text": "(summary)"}  # compaction summaries need no script of their own
        if role_script is None:
            return {"text": f"(no script for role {request.role!r})"}
        if callable(role_script):
            return role_script(request)
        if request.turn_index >= len(role_script):
            return {"text": "(script exhausted)"}
        turn = role_script[request.turn_index]
        if request.iteration >= len(turn):
            return {"text": "(script exhausted)"}
        return turn[request.iteration]

    def _tool_call(self, call: Mapping[str, Any]) -> ToolCall:
        self._call_seq += 1
        args = call.get("arguments", {})
        raw = args if isinstance(args, str) else json.dumps(args)
        return ToolCall(id=str(call.get("id", f"call_{self._call_seq}")), name=str(call["name"]), arguments=raw)
