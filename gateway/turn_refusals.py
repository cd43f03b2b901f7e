"""What of a turn, or of a stop, the store refused (a full disk), gathered to be logged once.

A turn's writes (its reply, its delegation's outcome, its transcript, its notes) each may meet a
full disk; raising would leave the session showing the turn running for good. `Refusals` notes
each refusal instead, tells whether any of them holds the turn's messages unsettled, and logs them
as one line. It stands apart from `gateway.turn_runner` as the one shape of that bookkeeping, shared
by a turn's end, a stop's and the paying of owed turn ends.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Iterator

from gateway.owed_ends import Unpaid
from gateway.sessions import GatewaySession

log = logging.getLogger("gateway.turn_runner")  # the turn runner's lines, wherever they are written from

UNSETTLED = ("what it answers stays unsettled: the turn runs again after the next start, unless its end is"
             " recorded before, with the chat's next turn or /new")
"""A turn end that is owed (`gateway.owed_ends`), as the log tells it."""


class Refusals:
    """What of a turn, or of a stop, the store refused (a full disk): noted, not raised, so that the
    turn ends all the same and its chat goes on; logged as one line, without a traceback (the
    database names the cause once as well)."""

    def __init__(self) -> None:
        self._refused: dict[str, sqlite3.Error] = {}
        self.holds = False
        """Something the turn's messages may not be settled without was refused: its answer, its
        delegation's outcome, its transcript (not a note beside them, nor its progress message)."""

    @contextlib.contextmanager
    def noting(self, what: str, *, holds: bool = True) -> Iterator[None]:
        """A store write for ``what``; ``holds``: the turn's messages may not be settled if it is refused."""
        try:
            yield
        except sqlite3.Error as exc:
            self.note(what, exc, holds=holds)

    def note(self, what: str, exc: sqlite3.Error, *, holds: bool = True) -> None:
        self._refused.setdefault(what, exc)
        self.holds = self.holds or holds

    @classmethod
    def single(cls, what: str, exc: sqlite3.Error) -> Refusals:
        refused = cls()
        refused.note(what, exc)
        return refused

    def log(self, what: str, session: GatewaySession, then: str) -> None:
        if self._refused:
            exc = next(iter(self._refused.values()))
            log.warning("could not record %s in %s chat %s (%s: %s; not recorded: %s): %s", what, session.platform,
                        session.chat_id, type(exc).__name__, exc, ", ".join(self._refused), then)

    def log_turn(self, turn_id: str, session: GatewaySession) -> None:
        self.log(f"all of turn {turn_id}", session, UNSETTLED if self.holds else "the rest of it is recorded")


def owed_by(unpaid: Unpaid) -> str:
    return f"the end of turn {unpaid.turn_id} owed before ({unpaid.what})"
