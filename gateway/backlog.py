"""The backlog guard: how many background results a chat may have waiting.

Every background delegation whose results have not been delivered yet (``running``
in the ledger) counts. When a delegation takes a chat above `BACKLOG_WARN`, the chat
is warned once (again only after the backlog has fallen back) and the model gets a
note; a background delegation by the model that would take a chat above
`BACKLOG_LIMIT` is refused before any child starts (what the user asks for —
``/retry``, ``/agents retry`` — is not).
"""

from __future__ import annotations

from agent import ToolError
from gateway.outbox import Outbox
from gateway.session_registry import SessionRegistry
from gateway.sessions import GatewaySession
from gateway.store import DelegationTable
from lifecycle import BackgroundDispatch

BACKLOG_WARN = 25
"""Above this many undelivered background delegations, a chat is warned."""
BACKLOG_LIMIT = 50
"""The model's background delegations never take a chat above this many undelivered ones."""


class BacklogGuard:
    def __init__(self, table: DelegationTable, registry: SessionRegistry, outbox: Outbox) -> None:
        self._table = table
        self._registry = registry
        self._outbox = outbox

    def waiting(self, session: GatewaySession) -> int:
        """The chat's background delegations whose results have not been delivered yet."""
        return self._table.count_unsettled(session.key)

    def admit(self, agent_session_id: str) -> str | None:
        """The background tool's ``admit``: refuse (`ToolError`) a delegation that would take the
        chat above `BACKLOG_LIMIT`; above `BACKLOG_WARN`, a note for the model."""
        session = self._registry.by_agent(agent_session_id)
        if session is None:
            return None  # the ledger refuses it when recording, naming why
        waiting = self.waiting(session)
        if waiting >= BACKLOG_LIMIT:
            raise ToolError(
                f"Refused, no subagent was started: this chat already has {waiting} background results waiting to be "
                f"delivered, the most it may hold ({BACKLOG_LIMIT}). Tell the user; new background work is accepted "
                "again as those results are delivered (/agents lists them, /stop drops them)."
            )
        if waiting >= BACKLOG_WARN:
            return (f"This chat has {waiting + 1} background results waiting to be delivered; above {BACKLOG_LIMIT} "
                    "new background work is refused. Let dispatched work finish before dispatching more.")
        return None

    def recorded(self, session: GatewaySession, dispatch: BackgroundDispatch, waiting_before: int) -> None:
        """A delegation was recorded: warn the chat when it just went above `BACKLOG_WARN`."""
        if waiting_before == BACKLOG_WARN:
            self._outbox.enqueue(
                *session.chat, f"⚠️ {waiting_before + 1} background results are waiting to be delivered in this chat. "
                f"New background work is refused once {BACKLOG_LIMIT} are waiting; /agents lists them, /stop drops "
                "them.", kind="completion", key=f"{dispatch.delegation_id}:backlog", turn_id=dispatch.parent_turn_id)
