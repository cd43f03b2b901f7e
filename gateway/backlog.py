"""The backlog guard: how many background results a chat may have waiting.

Every background delegation whose results have not been delivered yet (``running``
in the ledger) counts, the model's and those the user launched again (``/retry``,
``/agents retry``). When a delegation by the model takes a chat above `BACKLOG_WARN`, or
finds it above where such a relaunch took it, the chat is warned once (again only after the
backlog has fallen back) and the model gets a note; a background delegation by the model
that would take a chat above `BACKLOG_LIMIT` is refused before any child starts (what the
user asks for is not).
"""

from __future__ import annotations

import logging
import sqlite3
import weakref

from agent import ToolError
from gateway.outbox import Outbox
from gateway.session_registry import SessionRegistry
from gateway.sessions import GatewaySession
from gateway.store import DelegationTable
from lifecycle import BackgroundDispatch

log = logging.getLogger("gateway.backlog")

BACKLOG_WARN = 25
"""Above this many undelivered background delegations, a chat is warned."""
BACKLOG_LIMIT = 50
"""The model's background delegations never take a chat above this many undelivered ones."""


class BacklogGuard:
    def __init__(self, table: DelegationTable, registry: SessionRegistry, outbox: Outbox) -> None:
        self._table = table
        self._registry = registry
        self._outbox = outbox
        self._above: weakref.WeakKeyDictionary[GatewaySession, bool] = weakref.WeakKeyDictionary()
        """Whether the model's latest delegation left the chat above `BACKLOG_WARN` (warned then, or by a process
        before this one): a relaunch by the user, which the guard does not see, may take it above in between."""

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
        """A delegation was recorded: warn the chat when it just went above `BACKLOG_WARN`, or is found above
        though it was not at the model's delegation before (``/retry`` or ``/agents retry`` took it there)."""
        was_above, self._above[session] = self._above.get(session), waiting_before >= BACKLOG_WARN
        # Unknown (None: not seen since the start) and above already: warned by the process before, most likely.
        if waiting_before < BACKLOG_WARN or (waiting_before > BACKLOG_WARN and was_above is not False):
            return
        text = (f"⚠️ {waiting_before + 1} background results are waiting to be delivered in this chat. New "
                f"background work is refused once {BACKLOG_LIMIT} are waiting; /agents lists them, /stop drops them.")
        try:
            self._outbox.enqueue(*session.chat, text, kind="completion", key=f"{dispatch.delegation_id}:backlog",
                                 turn_id=dispatch.parent_turn_id)
        except sqlite3.Error as exc:
            # The delegation is recorded and its children run: failing the call now would tell the model
            # they did not start (and it would dispatch them again). The model's note still says it.
            log.warning("the backlog warning of delegation %s could not be journaled (%s); the chat is not warned",
                        dispatch.delegation_id, exc)
