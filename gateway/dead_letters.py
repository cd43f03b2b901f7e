"""Events the gateway fails to handle: tried again after a pause, then set aside, never replayed
into a crash.

Handling an event can fail (a bug meets an odd event). The failure is counted in the inbox
and the event is tried again after a pause that doubles (0.5 s, 1 s, …). The state database
refusing a write (a full disk, `platforms.not_recorded.storage_refusal`) is no fault of the event:
that is not counted, and the event is tried again the same way for as long as the database refuses
(`DeadLetterPolicy.refused`). A gateway that died (rather than stopped) while an event's
turn ran counts as a failed attempt too, so an event that crashes the process is not
replayed into every start; one still waiting for its turn had no part in it, nor one whose turn
waited for the chat's answer to a question (`gateway.questions`) while no child it launched ran in
this process. Once it has
failed ``inbox.max_attempts`` times it becomes a dead letter: logged once with its error, set
aside, and its chat (when the outbox can reach it) gets a short apology. ``switchboard inbox retry ID`` hands one
back; `DeadLetterPolicy.watch_requeued` picks it up within seconds while the
gateway runs.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Collection

from agent import Clock
from gateway.outbox import Outbox
from gateway.sessions import quote_of
from gateway.store import Inbox
from platforms.base import Inbound
from platforms.not_recorded import storage_refusal

log = logging.getLogger("gateway.dead_letters")

APOLOGY = ("Sorry — I could not handle your last message and have set it aside for the operator to look at. "
           "Please try again, perhaps in other words.")
CUT_SHORT = "the gateway died while handling it"
REQUEUE_POLL_SECONDS = 2.0
FIRST_PAUSE_SECONDS, MAX_PAUSE_SECONDS = 0.5, 30.0

Handle = Callable[[Inbound, str | None], Awaitable[object]]
"""How the gateway handles an accepted event again (with the turn id it was given)."""


class DeadLetterPolicy:
    def __init__(self, inbox: Inbox, outbox: Outbox, *, max_attempts: int, clock: Clock, handle: Handle,
                 platforms: Collection[str] | None = None) -> None:
        """``platforms``: those configured, whose re-queued events `watch_requeued` takes up (None: all).
        Another platform's stay re-queued until a gateway that configures it starts: handled here, its
        turn would have no adapter to answer through."""
        self._inbox = inbox
        self._platforms = platforms
        self._outbox = outbox
        self._max_attempts = max_attempts
        self._clock = clock
        self._handle = handle
        self._retries: set[asyncio.Task] = set()
        self._refusals: dict[tuple[str, str], int] = {}
        """Events being tried again because the store refused their handling: how many times it has."""

    def failed(self, inbound: Inbound, turn_id: str | None, exc: BaseException) -> bool:
        """Handling ``inbound`` raised ``exc``: try again later (True), or set it aside for good."""
        error = f"{type(exc).__name__}: {exc}"
        attempts = self._inbox.failed(inbound.platform, inbound.event_id, error)
        if attempts < self._max_attempts:
            log.warning("handling %s event %s failed (attempt %d of %d), trying again: %s", inbound.platform,
                        inbound.event_id, attempts, self._max_attempts, error, exc_info=exc)
            pause = min(MAX_PAUSE_SECONDS, FIRST_PAUSE_SECONDS * 2 ** (attempts - 1))
            task = asyncio.ensure_future(self._again(inbound, turn_id, pause))
            self._retries.add(task)
            task.add_done_callback(self._retries.discard)
            return True
        self._set_aside(inbound, attempts, error, exc)
        return False

    def refused(self, inbound: Inbound, turn_id: str | None, exc: BaseException) -> None:
        """Handling ``inbound`` met the store's refusal (a full disk, a lock: `platforms.not_recorded.storage_refusal`),
        which says nothing of the event. Counted, a full disk lasting a few tries would set a fine event aside
        with an apology. So it is not counted, stays unsettled, and is tried again after a pause that doubles
        (up to `MAX_PAUSE_SECONDS`), for as long as the store refuses: handled within that pause of there
        being room, without a restart. A stop leaves it, unsettled and uncharged, for the next start. One
        `WARNING` per event, not one per try."""
        key = (inbound.platform, inbound.event_id)
        tries = self._refusals[key] = self._refusals.get(key, 0) + 1
        # Bounded before the power: a disk full for hours makes thousands of tries, and 2.0 ** 1024 overflows.
        pause = min(MAX_PAUSE_SECONDS, FIRST_PAUSE_SECONDS * 2 ** min(tries - 1, 16))
        (log.warning if tries == 1 else log.debug)(
            "%s event %s: the state database refused what handling it needs (%s: %s); not counted as a failed "
            "attempt, it is tried again in %.1fs, and until the database can be written", inbound.platform,
            inbound.event_id, type(exc).__name__, exc, pause)
        task = asyncio.ensure_future(self._again_refused(inbound, turn_id, pause, tries))
        self._retries.add(task)
        task.add_done_callback(self._retries.discard)

    async def _again_refused(self, inbound: Inbound, turn_id: str | None, pause: float, tries: int) -> None:
        key = (inbound.platform, inbound.event_id)
        try:
            await self._again(inbound, turn_id, pause)
        finally:
            if self._refusals.get(key) == tries:  # not refused again: handled, or failed otherwise
                del self._refusals[key]

    def cut_short(self, inbound: Inbound) -> bool:
        """The last gateway died (it did not stop) while the turn of ``inbound`` ran: that counts as a
        failed attempt, so an event that kills the process (memory, a native crash) is set aside
        rather than replayed into every start. True if it may be handled again.

        If the state database refuses to record the attempt or the dead letter (a full disk), the
        start goes on without the event: it is logged and stays unsettled, as it was, for the next
        start. Handled uncounted, an event that kills the process would be replayed into every start.
        So does any other failure (a bug meeting an odd event): it is logged with the event's id, and
        never stops the start, which would leave every chat unanswered for one event."""
        try:
            return self._cut_short(inbound)
        except Exception:
            log.exception("%s event %s: charging it the gateway's death failed; it is not handled now and is kept "
                          "for the next start", inbound.platform, inbound.event_id)
            return False

    def _cut_short(self, inbound: Inbound) -> bool:
        try:
            attempts = self._inbox.failed(inbound.platform, inbound.event_id, CUT_SHORT)
        except sqlite3.Error as exc:
            _not_recorded(inbound, "attempt the gateway's death cut short", exc)
            return False
        if attempts < self._max_attempts:
            log.warning("%s event %s was being handled when the gateway died (attempt %d of %d); handling it again",
                        inbound.platform, inbound.event_id, attempts, self._max_attempts)
            return True
        try:
            self._set_aside(inbound, attempts, CUT_SHORT, None)
        except sqlite3.Error as exc:  # raised before anything was logged or sent: nothing happened
            _not_recorded(inbound, f"dead letter it became after {attempts} attempts", exc)
        return False

    def _set_aside(self, inbound: Inbound, attempts: int, error: str, exc: BaseException | None) -> None:
        letter = self._inbox.set_aside(inbound.platform, inbound.event_id)
        log.error("%s event %s failed %d times; set aside as dead letter %s (`switchboard inbox dead`): %s",
                  inbound.platform, inbound.event_id, attempts, letter, error, exc_info=exc)
        try:
            # Under the event's turn: the turn id a webhook's 202 named ends with this message.
            self._outbox.enqueue(inbound.platform, inbound.chat_id, inbound.thread_id, APOLOGY, kind="command",
                                 key=f"dead-{inbound.platform}-{inbound.event_id}", reply_token=inbound.reply_token,
                                 reply_to=quote_of(inbound),
                                 turn_id=self._inbox.turn_of(inbound.platform, inbound.event_id))
        except Exception as apology_failed:  # the chat itself may be what is broken: the log has it all
            log.warning("could not apologise to %s chat of event %s: %s", inbound.platform, inbound.event_id,
                        type(apology_failed).__name__)

    async def _again(self, inbound: Inbound, turn_id: str | None, pause: float) -> None:
        await self._clock.sleep(pause)
        await self._handle_or_keep(inbound, turn_id)

    async def watch_requeued(self, interval: float = REQUEUE_POLL_SECONDS) -> None:
        """Hand events ``switchboard inbox retry`` re-queued back to the gateway, until cancelled."""
        while True:
            await self._clock.sleep(interval)
            try:
                requeued = self._inbox.take_requeued(of=self._platforms)
            except Exception as exc:
                if not storage_refusal(exc):
                    log.exception("taking up re-queued events failed")
                else:  # expected while the database refuses, at every poll: a traceback would tell nothing more
                    log.warning("taking up re-queued events failed: the state database refused it (%s: %s); "
                                "looking again in %.1f s", type(exc).__name__, exc, interval)
                continue
            for inbound, turn_id in requeued:  # each on its own: one that fails keeps none of the others waiting
                log.info("handling re-queued %s event %s", inbound.platform, inbound.event_id)
                await self._handle_or_keep(inbound, turn_id)

    async def _handle_or_keep(self, inbound: Inbound, turn_id: str | None) -> None:
        """Handle the event; should even its failure not be recorded (the state database refuses it),
        it stays unsettled, as it is, for the next start."""
        try:
            await self._handle(inbound, turn_id)
        except Exception as exc:
            log.error("%s event %s: handling it failed, and so did counting that (%s: %s); it is not handled "
                      "now and is kept for the next start", inbound.platform, inbound.event_id, type(exc).__name__,
                      exc, exc_info=exc)

    async def close(self) -> None:
        retries = list(self._retries)
        for task in retries:
            task.cancel()
        await asyncio.gather(*retries, return_exceptions=True)


def _not_recorded(inbound: Inbound, what: str, exc: sqlite3.Error) -> None:
    log.error("%s event %s: the state database refused to record the %s (%s: %s); it is not handled now and is "
              "kept for the next start", inbound.platform, inbound.event_id, what, type(exc).__name__, exc)
