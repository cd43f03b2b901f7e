"""What the gateway forgets, and when: old inbox and outbox rows (and the copies of files the agent sent
that no send names any more), conversations no message was seen in for a month, idle sessions' memory, and, only
where ``sessions.retention_days`` is set, the stored sessions no turn was taken in, nor command sent, for that long.

Sessions live in the store; one idle for a while (no turn running, nothing queued, no
child still working for it, no turn end owed) leaves memory and is loaded again when its chat
next speaks. Left to themselves, stored sessions and their transcripts are kept until ``/new``: a public bot
keeps a row for every chat it ever met, and its conversation. Each sweep first records the turn ends that idle
sessions owe (`gateway.owed_ends`): refused by a full disk, they would otherwise wait for their chat's next message.

Old rows are forgotten `PRUNE_BATCH` at a time, the event loop free between batches: the first
sweep after a long stop, or on a busy week's file, has hundreds of thousands to forget, and one
statement for them all held every send, heartbeat and turn for a second or more.

Each step (the owed turn ends, each table, the eviction) goes on when another fails: a full disk
refuses the deletes, and memory would otherwise grow with every chat until there was room again. A
step that fails says so once, not at every sweep, and once more when it goes through again.

Ages are read on the wall clock, which dates the rows. Moved ahead at once (NTP correcting a clock that ran
slow, a board booted with a stale date, a suspend), it would make the rows of the last minutes days old: the
duplicate check of messages just handled forgotten (a redelivery answered twice), every conversation's last
message too (the next start catching up on nothing). So each sweep compares how far the wall clock went since
the last one (or since the start) with how far the monotonic clock did: more than `STEP_SECONDS` ahead is taken
for a step, said once, and, for each table, added to its retention until that retention has passed on the
monotonic clock since: a row dated before the step is forgotten when its retention has passed on the monotonic
clock, one dated after it as usual. A step while the gateway was stopped cannot be told from a long stop, and is not looked for.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator

from agent import Clock
from gateway.outbox_files import OutboxFiles
from gateway.session_registry import SessionRegistry
from gateway.store import GatewayStore, delegations, inbox, last_seen, outbox_rows
from lifecycle import HostView

log = logging.getLogger("gateway.retention")

INTERVAL_SECONDS = 300.0
IDLE_SESSION_SECONDS = 3600.0
PRUNE_BATCH = 1000
"""Rows one statement forgets: some milliseconds of the event loop, which SQLite's statements run on
(`lifecycle.SqliteDatabase`), where 200,000 outbox rows at once held it for over a second. Each batch
commits on its own: smaller ones would take a backlog longer to forget."""
STEP_SECONDS = 3600.0
"""How far the wall clock may go ahead of the monotonic one between two sweeps before it is taken for a step
(see the module's docstring): NTP slews a clock that drifted by less, a fraction of a second each sweep."""
COPY_GRACE_SECONDS = 24 * 3600.0
"""Age past which a copy of a file the agent sent (`gateway.outbox_files`) that no pending or failed send names
is removed: one being made, or made and its send not journaled yet, is younger."""


class Retention:
    def __init__(self, store: GatewayStore, registry: SessionRegistry, children: HostView, *, clock: Clock,
                 pay_owed: Callable[[], object], idle_after: float = IDLE_SESSION_SECONDS,
                 batch: int = PRUNE_BATCH, files: OutboxFiles | None = None,
                 forget_sessions_after: float = 0.0) -> None:
        """``pay_owed``: records the turn ends idle sessions owe (`gateway.turn_runner.TurnRunner.pay_owed`).
        ``batch``: rows forgotten per statement (`PRUNE_BATCH`). ``files``: the copies of files the agent
        sent, those no send names removed (`COPY_GRACE_SECONDS`). ``forget_sessions_after``: seconds after its last
        stored turn a session not in memory is forgotten, transcript and all (`SessionTable.forget`); 0: never
        (``sessions.retention_days``)."""
        self._store = store
        self._files = files
        self._pay_owed = pay_owed
        self._registry = registry
        self._children = children
        self._clock = clock
        self.idle_after = idle_after
        self.batch = batch
        self.forget_sessions_after = forget_sessions_after
        self._failing: dict[str, tuple[str, str]] = {}
        """The steps whose latest try failed -> how (exception type and text): said again only if it changes."""
        self._read_at = (clock.time(), clock.monotonic())
        """The wall and monotonic clocks at the last sweep (at first, at the start): to see a step between."""
        self._steps: list[tuple[float, float]] = []
        """The wall clock's steps ahead: (monotonic time it was seen, seconds), while a retention may still span it."""

    def sweep(self) -> tuple[int, int, int]:
        """One round, at once; returns (inbox rows, outbox rows, sessions) forgotten. It holds the
        event loop throughout: the gateway's own rounds are `sweep_in_batches`. A step that fails is logged
        (once while it keeps failing alike) and the others go on (see the module's docstring)."""
        self._owed()
        forgotten: Counter[str] = Counter()
        for table, count in self._batches():
            forgotten[table] += count
        return self._end(forgotten)

    async def sweep_in_batches(self) -> tuple[int, int, int]:
        """`sweep`, letting the event loop go on after each batch of rows it forgets. Each batch weighs
        the rows afresh: one that is needed again meanwhile (a dead letter handed back) is kept."""
        self._owed()
        forgotten: Counter[str] = Counter()
        for table, count in self._batches():
            forgotten[table] += count
            await asyncio.sleep(0)  # the batch's group commit runs first (queued at its first write)
        return self._end(forgotten)

    def _owed(self) -> None:
        # First: what a chat waits for, and a session that owed nothing more may leave memory. The store's
        # refusals it says itself (`TurnRunner.pay_owed`); what it raises is a fault of its own.
        try:
            self._pay_owed()
        except Exception as exc:
            self._failed("recording the turn ends idle chats owe", exc)
        else:
            self._went_through("recording the turn ends idle chats owe")

    def _batches(self) -> Iterator[tuple[str, int]]:
        """Forget old rows a batch at a time, table after table, then the copies of files no send names; each
        step yields what one forgot. A table whose prune raises is left until the next sweep, the tables after
        it forgotten all the same."""
        now = self._clock.time()
        self._note_step(now)
        store = self._store
        for table, prune, kept_for in (("inbox", store.inbox.prune, inbox.RETENTION_SECONDS),
                                       ("outbox", store.outbox.prune, outbox_rows.RETENTION_SECONDS),
                                       ("delegations", store.delegations.prune, delegations.RETENTION_SECONDS),
                                       ("last_seen", store.last_seen.prune, last_seen.RETENTION_SECONDS),
                                       ("held", self._forget_held, 0.0)):
            step = f"forgetting old {table} rows"
            while True:
                try:
                    count = prune(self._before(now, kept_for), self.batch)
                except Exception as exc:
                    self._failed(step, exc)
                    break
                yield table, count
                if count < self.batch:
                    self._went_through(step)
                    break
        if self.forget_sessions_after > 0:
            step = "forgetting sessions no turn was taken in"
            while True:
                try:
                    count, more = self._forget_sessions(self._before(now, self.forget_sessions_after))
                except Exception as exc:
                    self._failed(step, exc)
                    break
                yield "sessions", count
                if not more:
                    self._went_through(step)
                    break
        # A failed send's copy is kept for a retry until its row is forgotten (above): left to the next start,
        # a gateway running for months would keep every file that ever failed.
        step = "removing the copies of files no send names"
        if self._files is not None:
            try:
                removed = self._files.sweep(store.outbox.kept_files(),
                                            made_before=self._before(now, COPY_GRACE_SECONDS))
            except Exception as exc:
                self._failed(step, exc)
            else:
                self._went_through(step)
                yield "copies", removed

    def _note_step(self, now: float) -> None:
        """Note how far the wall clock went ahead of the monotonic one since the last sweep, past `STEP_SECONDS`
        (a step back only keeps rows longer: none is noted)."""
        mono = self._clock.monotonic()
        wall_then, mono_then = self._read_at
        self._read_at = (now, mono)
        longest = max(inbox.RETENTION_SECONDS, outbox_rows.RETENTION_SECONDS, delegations.RETENTION_SECONDS,
                      last_seen.RETENTION_SECONDS, COPY_GRACE_SECONDS, self.forget_sessions_after)
        self._steps = [(seen, ahead) for seen, ahead in self._steps if mono - seen < longest]
        ahead = (now - wall_then) - (mono - mono_then)
        if ahead > STEP_SECONDS:
            self._steps.append((mono, ahead))
            log.warning("retention: the wall clock moved %.1f hours ahead of the monotonic clock since the last"
                        " sweep (a clock step, or a suspend); the rows dated before are kept that much longer,"
                        " so that none is forgotten early", ahead / 3600)

    def _before(self, now: float, kept_for: float) -> float:
        """The wall time before which a row is older than ``kept_for``: the steps ahead seen less than
        ``kept_for`` ago (monotonic) added to its age, since the rows dated before them are that much younger."""
        mono = self._clock.monotonic()
        return now - kept_for - sum(ahead for seen, ahead in self._steps if mono - seen < kept_for)

    def _forget_held(self, _: float, batch: int) -> int:
        """Messages an earlier process held in the store (`gateway.session_registry.QUEUED`): handed over anew."""
        return self._store.sessions.forget_held(self._registry.run, batch)

    def _forget_sessions(self, before: float) -> tuple[int, bool]:
        """One batch of the stored sessions last active ``before``; kept, with what the store keeps itself: those
        in memory (a turn may run, or have just begun to) and those a child still works for."""
        return self._store.sessions.forget(before, self._registry.keys(), self._children.sessions_with_children(),
                                           self.batch)

    def _end(self, forgotten: Counter[str]) -> tuple[int, int, int]:
        try:
            evicted = self._registry.evict_idle(self.idle_after, lambda sid: bool(self._children.children(sid)))
        except Exception as exc:
            self._failed("evicting idle sessions", exc)
            evicted = 0
        else:
            self._went_through("evicting idle sessions")
        if forgotten["inbox"] or forgotten["outbox"] or evicted:
            log.info("retention: forgot %d inbox rows, %d outbox rows, %d idle sessions", forgotten["inbox"],
                     forgotten["outbox"], evicted)
        if forgotten["sessions"]:
            log.info("retention: forgot %d stored sessions no turn was taken in for %g days, and their conversations",
                     forgotten["sessions"], self.forget_sessions_after / 86400)
        return forgotten["inbox"], forgotten["outbox"], evicted

    def _failed(self, step: str, exc: Exception) -> None:
        """Say a step failed, once while it fails alike: at every sweep, a full disk's refusal was an ERROR
        with its traceback every five minutes for as long as the disk stayed full."""
        how = (type(exc).__name__, str(exc))
        if self._failing.get(step) == how:
            log.debug("retention: %s failed again: %s: %s", step, *how)
            return
        self._failing[step] = how
        if isinstance(exc, sqlite3.Error):  # the store's refusal: the database names its cause itself
            log.warning("retention: %s failed (%s: %s); tried again at each sweep, the other steps go on",
                        step, *how)
        else:
            log.error("retention: %s failed; tried again at each sweep, the other steps go on", step, exc_info=exc)

    def _went_through(self, step: str) -> None:
        if self._failing.pop(step, None) is not None:
            log.info("retention: %s goes through again", step)

    async def run_forever(self, interval: float = INTERVAL_SECONDS) -> None:
        while True:
            await self._clock.sleep(interval)
            try:
                await self.sweep_in_batches()
            except Exception:
                log.exception("retention sweep failed")
