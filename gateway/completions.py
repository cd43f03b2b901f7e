"""Background results: when a session's background children finish, their results become a
new internal turn of that session, run once it is idle (its reply is message 2)."""

from __future__ import annotations

import json
import logging
from typing import Any

from gateway.replies import SILENCE
from gateway.session_registry import SessionRegistry
from gateway.sessions import WorkItem, new_turn_id
from gateway.turn_runner import TurnRunner

log = logging.getLogger("gateway.completions")

COMPLETION_PREFIX = (
    "[Background delegation results] The subagents you dispatched earlier have finished. Tell the user "
    f"what they found. If nothing needs saying, reply with exactly {SILENCE}.\n"
)


class Completions:
    def __init__(self, registry: SessionRegistry, runner: TurnRunner) -> None:
        self._registry = registry
        self._runner = runner

    async def deliver(self, parent_session_id: str, payload: dict[str, Any]) -> None:
        """The background delegate tool's ``on_complete``: queue the results as a completion turn,
        unless the session generation that dispatched them ended or ``/stop`` came after them."""
        session = self._registry.by_agent(parent_session_id)
        if session is None:
            log.info("dropping background results of an ended session generation (%s)", payload["delegation_id"])
            return
        if payload.get("dispatched_at", 0.0) < session.last_stop_at:
            log.info("dropping background results stopped by /stop (%s)", payload["delegation_id"])
            return
        text = COMPLETION_PREFIX + json.dumps(payload, ensure_ascii=False)
        self._runner.submit(session, WorkItem("completion", text, new_turn_id()))
