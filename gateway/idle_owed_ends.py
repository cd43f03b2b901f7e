"""Paying the turn ends that sessions with no turn running or waiting owe (`gateway.owed_ends`).

A session with a worker pays its own before each turn and with each turn's end. An idle one has no
turn to do it: its answer would wait for the chat's next message. `IdleOwedEnds` pays those soon
after the store refused them, backing off, at every retention sweep, and once more at a graceful
stop. It stands apart from `gateway.turn_runner` because it runs beside the turns, never inside
one: it needs only to know which sessions have a worker, and whether the gateway is stopping.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection

from agent import Clock
from gateway.owed_ends import OwedEnds, Unpaid
from gateway.session_registry import SessionRegistry
from gateway.sessions import GatewaySession

log = logging.getLogger("gateway.turn_runner")  # the turn runner's lines, wherever they are written from

PAY_AGAIN_FIRST, PAY_AGAIN_MAX = 1.5, 60.0
"""Seconds before the turn ends idle chats owe are first tried again (`IdleOwedEnds.pay_soon`), and the most
between two tries (the wait doubles): an answer out within a minute of the store taking writes again."""


class IdleOwedEnds:
    def __init__(self, registry: SessionRegistry, owed: OwedEnds, clock: Clock, *,
                 busy: Callable[[GatewaySession], bool], stopping: Callable[[], bool]) -> None:
        """``busy(session)``: the session has a worker, which pays its own; ``stopping()``: the
        gateway takes no more turns (nothing is tried again then but by `pay_at_stop`)."""
        self._registry, self._owed, self._clock = registry, owed, clock
        self._busy, self._stopping = busy, stopping
        self._paying: asyncio.Task[None] | None = None
        """Tries the turn ends idle sessions owe again, backing off, while any owes one (`pay_soon`)."""

    def stop(self) -> None:
        """No more tries in the background (the stop's `pay_at_stop` pays once more, after the turns)."""
        if self._paying is not None:
            self._paying.cancel()

    def pay_at_stop(self, cut_short: Collection[GatewaySession]) -> None:
        """Pay, once the turns have ended at a stop, what the sessions not in ``cut_short`` owe."""
        try:
            paid, refused = self.pay(lambda session: session not in cut_short)
        except Exception:  # the stop goes on: what is not recorded runs again after the next start
            log.exception("recording the turn ends idle chats owe, before stopping, failed")
            return
        if paid:
            log.info("recorded the turn ends %d idle chat(s) owed, before stopping", paid)
        if refused:
            first = refused[0]
            log.warning("could not record the turn ends %d chat(s) owe before stopping (%s: %s; not recorded, of the"
                        " end of turn %s: %s): their turns run again after the next start", len(refused),
                        type(first.error).__name__, first.error, first.turn_id, first.what)

    def pay_owed(self) -> int:
        """`TurnRunner.pay_owed`: the retention sweep's pay; how many sessions the store still refused."""
        paid, refused = self.pay()
        if paid:
            log.info("recorded the turn ends %d idle chat(s) owed", paid)
        if refused:
            first = refused[0]
            log.warning("could not record the turn ends %d idle chat(s) owe (%s: %s; not recorded, of the end of"
                        " turn %s: %s): tried again at the next retention sweep, or with the chat's next turn",
                        len(refused), type(first.error).__name__, first.error, first.turn_id, first.what)
            self.pay_soon()
        return len(refused)

    def pay(self, also: Callable[[GatewaySession], bool] = lambda session: True) -> tuple[int, list[Unpaid]]:
        """Pay the turn ends owed by the sessions without a worker or a turn, queued or running (and
        for which ``also`` holds): how many paid, and the first refusal of each of the others."""
        refused: list[Unpaid] = []
        paid = 0
        for session in self._registry:
            if not session.owed or session.running is not None or self._busy(session) or not also(session):
                continue
            if session.queue and not self._stopping():
                continue  # a worker comes for it, and pays first
            if (unpaid := self._owed.pay(session)) is None:
                paid += 1
            else:
                refused.append(unpaid)
        return paid, refused

    def pay_soon(self) -> None:
        """A session without a worker owes a turn end the store refused: try it again shortly, then
        backing off, rather than at the next retention sweep (every five minutes), for an idle chat's answer
        to go out soon after the store takes writes again."""
        if self._paying is None and not self._stopping():
            self._paying = asyncio.ensure_future(self._pay_until_paid())

    async def _pay_until_paid(self) -> None:
        """Said once, by the turn's end (or the stop's): a full disk is named by the database too."""
        delay = PAY_AGAIN_FIRST
        try:
            while not self._stopping():
                await self._clock.sleep(delay)
                try:
                    paid, refused = self.pay()
                except Exception:  # not the store's refusal: the retention sweep tries them, and says so again
                    log.exception("recording the turn ends idle chats owe failed")
                    return
                if paid:
                    log.info("recorded the turn ends %d idle chat(s) owed", paid)
                if not refused:
                    return  # a session with a worker is its worker's, which calls again if it leaves one owed
                log.debug("the turn ends %d idle chat(s) owe are still refused: %s", len(refused), refused[0].error)
                delay = min(delay * 2, PAY_AGAIN_MAX)
        finally:
            self._paying = None
