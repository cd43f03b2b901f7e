"""Delivering one journaled part to a final state: the outbox's retry, pacing and fallback rules.

`Sender.deliver` takes a pending outbox row and returns once it is sent, failed or
dropped, writing every state change to the store before moving on. What it does
on each outcome of an adapter call is listed in `gateway.outbox`'s docstring;
the `Outbox` runs one `deliver` at a time per chat.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Callable, Collection, Iterable, Mapping

from agent import Clock
from gateway import resplit
from gateway.aside_writes import bind_aside_writes
from gateway.credential_hold import CredentialHolds
from gateway.events import GatewayEvents
from gateway.give_up import GiveUpClocks
from gateway.outbox_files import OutboxFiles
from gateway.outbox_part import PROGRESS_KINDS, describe, findable, outbound
from gateway.pacing import Pacer, account_op, pacing_of, refused_unasked
from gateway.part_notes import gave_up_on, late_note, missing_note
from gateway.quote_passing import pass_quote
from gateway.sent_lookup import SentLookup
from gateway.store import OutboxRow, OutboxRows
from platforms.base import (
    Adapter,
    AttachmentTooLarge,
    BadRequest,
    Closed,
    Deleting,
    DeliveryError,
    EditUnsupported,
    FindsSent,
    Forbidden,
    MessageTooLong,
    NetworkError,
    NotFound,
    RateLimited,
    SendsFiles,
    Unauthorized,
)
from platforms.pacing import GIVES_WAY, STEPS_ASIDE, Pacing, SteppedAside
from platforms.repeated_warnings import RepeatedWarnings

log = logging.getLogger("gateway.outbox")

BACKOFF_FIRST, BACKOFF_MAX = 0.5, 60.0
FAILURE_OVER_AFTER = 600.0
"""Seconds without a retry of an outage's parts (`_outage_of`) after which it is over though none went out: each was
given up on or dropped (warned of one by one); the next retry begins a failure of its own (`Sender._log_retry`).
Well past a retry's wait (`BACKOFF_MAX`) and a call's timeout, which a part retrying through one outage waits."""
_FINAL = (Forbidden, NotFound, BadRequest, EditUnsupported)
_EDIT_REFUSED = (EditUnsupported, NotFound, BadRequest, MessageTooLong)
_FILE_REFUSED = (MessageTooLong, AttachmentTooLarge)
"""A file's send the platform refuses for its size or its caption's: trying again changes nothing."""
NEVER_WENT_OUT = "never went out"
"""Why a change of a progress message withdrawn unsent is dropped (`Sender._drop_change_of_withdrawn`): the usual end
of a card a quick turn or a blip of the platform held back, said at DEBUG."""


def _outage_of(row: OutboxRow) -> str:
    """What ``row``'s calls fail together with, as the outbox's log names it: its platform, whose one API every
    chat calls; for a webhook, its route (the ``<route>:`` its chat id begins with), whose own receiver (its
    ``deliver_url``) is down or up apart from the other routes'."""
    if row.platform == "webhook":
        return f"webhook route {row.chat_id.partition(':')[0]!r}"
    return row.platform


_LOST_WHEN_FAILED = frozenset({"reply", "completion", "command"})
"""Parts a chat waits for (an answer, a background result, a command's): one sent (a message, a file) that failed for
good, not by the chat's own refusal, is an ERROR; a progress notice, an interim message or an edit failing a WARNING."""


def _refuses_chat(row: OutboxRow, exc: BaseException) -> bool:
    """Whether ``exc`` refused ``row`` as a message in its chat (`progress_message.CHAT_GONE`: the bot removed or
    blocked, the chat deleted): every message there, a note of the part too, is refused the same way for now. Not
    a file's `Forbidden`, which may be the file's alone (Discord's Attach Files). A webhook's file is a delivery as
    its text is, refused for good by its receiver alike (`NotFound`): one line per chat and refusal, not one per file
    of a receiver that takes none."""
    if row.op == "file":
        return row.platform == "webhook" and isinstance(exc, NotFound)
    return isinstance(exc, (Forbidden, NotFound))


def _changes_progress(row: OutboxRow) -> bool:
    """Whether ``row`` edits or deletes a progress message (a notice, a card): it is not given up on while the
    platform only refuses it for now (an outage, 5xx, 429s past ``give_up_after``). Failed, the card would
    read `⏳` for good though its turn ended, as nothing edits it again; tried on, it is finished once the
    platform is back. It holds nothing up meanwhile: a reply goes first, a newer change of it replaces it."""
    return row.kind in PROGRESS_KINDS and row.op in ("edit", "delete")


class Sender:
    def __init__(self, store: OutboxRows, adapters: Mapping[str, Adapter], *, clock: Clock, max_retry_after: float,
                 give_up_after: Mapping[str, float], default_give_up: float, rng: random.Random,
                 settle: Callable[[str, str | None], None], events: GatewayEvents | None = None,
                 late_after: float = 0.0, files: OutboxFiles | None = None,
                 on_wait: Callable[[], None] | None = None,
                 unspent: Callable[[OutboxRow], None] | None = None) -> None:
        """``unspent(row)``: ``row`` failed, and with it its turn's quote, which no part of the turn
        journaled since can take (`gateway.quote_passing`): the turn's next message may."""
        self._store, self._adapters, self._clock = store, adapters, clock
        self._unspent = unspent
        self._files = files
        self._late_after = late_after
        self._events = events or GatewayEvents()
        self._max_retry_after = max_retry_after
        self._rng = rng
        self._settle_cb = settle
        self._pacer = Pacer(clock, on_wait)
        bind_aside_writes(adapters, self._pacer, clock, max_retry_after)
        self._holds = CredentialHolds(clock, store, adapters.keys())
        self._started = clock.time()
        self._lookup = SentLookup(adapters, self._pacer, self._events, last_before=store.last_id(),
                                  max_retry_after=max_retry_after)
        self._give_up = GiveUpClocks(clock, self._holds, started=self._started, last_before=self._lookup.last_before,
                                     give_up_after=give_up_after, default_give_up=default_give_up)
        self._attempting: set[int] = set()
        """Parts on their way to the platform now (an attempt not answered yet)."""
        self._unrecorded: dict[int, Callable[[], None]] = {}
        """Parts whose outcome (sent, failed) the store failed to record: recording it again is
        all the next attempt at them does, so a part the platform took is never sent twice."""
        self._notes: dict[int, int] = {}
        """Failed parts whose note, journaled in their place (`part_notes.missing_note`), is not settled yet: should
        the store fail under its send, the part's next `deliver` sends it, ahead of what the chat queued behind it."""
        self._closed: set[str] = set()
        """Platforms that take nothing more from this process (`Closed`): their parts stay pending, untried."""
        self._failing: dict[str, tuple[float, float, int]] = {}
        """Platforms (webhook routes: `_outage_of`) whose calls go unanswered (down, 5xx): since when and when last
        retried (monotonic), and how many retries were logged at DEBUG since its first, at INFO; its next part sent
        says how long it lasted (`_sends_again`)."""
        self._rate_limits = RepeatedWarnings(log, level=logging.INFO, clock=clock.monotonic)
        """A rate limit's retries: one line per platform (webhook route) and 10 minutes, not one per part of every
        chat."""
        self._chat_refusals = RepeatedWarnings(log, clock=clock.monotonic)
        """Parts a chat refuses as a chat (`_refuses_chat`): one WARNING per chat and refusal and 10 minutes, not
        one per part of every answer into a deleted channel (the console shows each part's error). A refusal by its
        words, not its kind: the bot kicked after it lost a right (both `Forbidden`) is one more line, not hidden."""
        self._left_behind: dict[int, str] = {}
        """Parts sending a progress message's state anew because the platform refused its edit: the message it
        was to edit, deleted once the part is sent (`_delete_left_behind`). Kept here, not in `_deliver`, as a
        reply queued meanwhile returns it unsent (``preempt``): its next `_deliver` left the old one reading ⏳."""

    @property
    def remembered(self) -> int:
        """Parts the sender keeps something about in memory between attempts (none once final)."""
        return len(self._lookup.remembered_ids | self._left_behind.keys())

    def journaled(self, row_id: int) -> None:
        """The part ``row_id`` was journaled just now: its give-up clock starts (`gateway.give_up`)."""
        self._give_up.journaled(row_id)

    def requeued(self, row: OutboxRow) -> None:
        """The operator sends the failed part ``row`` again: its give-up clock starts over, and one that
        was tried is looked up first (where the platform can be asked), back to when it was first
        journaled (`OutboxRow.lookup_since`): given up on after answers were lost, it may be in the chat already."""
        self._give_up.journaled(row.id)
        self._lookup.requeued(row)

    async def deliver(self, row_id: int, *, preempt: asyncio.Event | None = None) -> bool:
        """Bring the row to a final state; True once it is. A row already final is only
        reported; a row of a platform without an adapter stays pending (that platform may be
        configured again), as does one of a platform that takes nothing more from this process
        (`Closed`: it is left for the next start, which the process's end comes to). False when
        ``preempt`` was set while the row waited (pacing, a 429, a backoff): it is still pending, its
        retry time journaled, for a later call.
        Raises what the store raises; the row's outcome, when known already, is kept for the
        next call, which only records it (and sends the note owed in its place, `_send_note`)."""
        if await self._finish(row_id):
            return True
        row = self._store.message_by_id(row_id)
        if row is None:
            self._give_up.forget(row_id)
            return True
        adapter = self._adapters.get(row.platform)
        if row.status != "pending":
            return await self._settle_final(adapter, row, preempt)
        if adapter is None:
            log.warning("outbox: no %s adapter; %s stays pending", row.platform, row.key)
            return True
        return await self._deliver(adapter, row, preempt)

    def _commit_before_call(self, row: OutboxRow) -> None:
        """Journal ``row`` durably before it can reach the platform, a new message marked tried (`maybe_sent`).
        A failed commit is the store's: raised to the chat, which backs off (never toward give_up_after),
        leaving its probe of a held platform to another part."""
        try:
            if row.op in ("send", "file") and not row.tried and row.id not in self._lookup.accounted:
                self._store.mark_tried(row.id)
                self._lookup.accounted.add(row.id)
            self._store.commit()
        except BaseException:
            self._holds.release(row.platform, row.id)
            raise

    def _close(self, row: OutboxRow, exc: Closed) -> None:
        """``row``'s platform takes nothing more from this process: the row stays pending, its
        attempt recorded (not toward giving up: the next start's clock counts no time it was tried),
        and so do the platform's later parts, untried."""
        if row.platform not in self._closed:
            self._closed.add(row.platform)
            log.info("outbox: %s takes nothing more from this process (%s); its messages stay pending for the"
                     " next start", row.platform, describe(exc))
        self._store.record_attempt(row.id, describe(exc), None)

    def calls(self, platform: str) -> bool:
        """Whether ``platform``'s parts are tried as their turn comes: neither `Closed` nor held for its credentials."""
        return platform in self._adapters and platform not in self._closed and self._holds.changed(platform) is None

    def waiting_beyond(self, tasks: Collection[asyncio.Task[object]], seconds: float) -> bool:
        """Whether every one of ``tasks`` (chats' senders) waits (pacing, a 429, a backoff) past
        ``seconds`` from now; ``on_wait`` is called each time one begins to wait."""
        return self._pacer.waiting_beyond(tasks, seconds)

    async def held_back(self, row_ids: Iterable[int], seconds: float, preempt: asyncio.Event | None = None) -> None:
        """Sleep ``seconds`` on the clock (cut short when ``preempt`` is set), for a chat the database
        failed under, its parts ``row_ids``: the time waited does not count toward giving up on them
        (`gateway.give_up`)."""
        started = self._clock.monotonic()
        try:
            await self._pacer.wait(seconds, preempt)
        finally:
            self._give_up.held_back(row_ids, self._clock.monotonic() - started)

    async def _deliver(self, adapter: Adapter, row: OutboxRow, preempt: asyncio.Event | None) -> bool:
        if await self._finish(row.id):  # a late note or a piece of a re-split part
            return True
        if row.op == "split":
            # Resumed after a restart in the middle of a re-split (its pieces and this op are
            # journaled in one transaction).
            await self._send_pieces(adapter, row)
            return True
        stale = False
        if row.next_attempt_at is not None:  # a retry time recorded earlier (a restart, a preemption)
            wait = row.next_attempt_at - self._clock.time()
            if not await self._pacer.wait(min(wait, self._max_retry_after), preempt):
                return False
            stale = True
        delay = BACKOFF_FIRST
        pacing = pacing_of(adapter, row.chat_id)
        asked = False  # whether the platform was asked about a withdrawn target (`_settle_final`)
        undeletable = False  # the platform refused to delete the target: not asked again (`_delete_left_behind`)
        while True:
            if row.platform in self._closed:  # since a part sent ahead of it (a late note, a piece): left as is
                return True
            if stale:  # after any await the row may have been dropped, superseded or pruned
                fresh = self._store.message_by_id(row.id)
                if fresh is None:
                    return True
                if fresh.status != "pending":
                    return await self._settle_final(adapter, fresh, preempt)
                row, stale = fresh, False
            target = self._target(row) if row.op in ("edit", "delete") else None
            target_id = target.message_id if target is not None else None
            withdrawn = target is not None and target.status == "dropped" and target.kind in PROGRESS_KINDS
            if withdrawn and target_id is None and target is not None and target.op == "split":
                # Re-split, then withdrawn after a piece went out (a restart came between): that piece is
                # the card in the chat, and this change finishes it; its other pieces were dropped with it.
                target_id = next((p.message_id for p in self._store.pieces(target.key) if p.status == "sent"), None)
            if withdrawn and target_id is None:
                # Posted just before a crash, say: ask first, once. Found, it has its id now and this
                # change finishes it; not found or not answered (an outage, an adapter stopped), it
                # stays "maybe sent", and asking again gets the same answer: it looped, never
                # yielding where the lookup failed at once, so a shutdown never finished.
                if not asked and self._lookup.withdrawn_maybe_sent(adapter, target):
                    if not await self._settle_final(adapter, target, preempt):
                        return False
                    asked = stale = True
                    continue
                self._drop_change_of_withdrawn(row, "was not found to have gone out" if asked else NEVER_WENT_OUT)
                return True
            # A card given up on while its answers were lost is asked for until the platform answers (found,
            # this change finishes it; not found, it is sent anew as for any edit without a message).
            find_target = target is not None and target_id is None and not asked and self.look_up_failed(target)
            if row.op == "delete" and (target_id is None or not isinstance(adapter, Deleting)) and not find_target:
                row = self._to_edit(row, "nothing to delete" if target_id is None else "the platform cannot delete")
            if row.op == "edit" and target_id is None and not find_target:
                row = self._to_send(row, "no sent message to edit")
            if row.op in ("edit", "delete") and target_id and refused_unasked(adapter, row.chat_id, target_id):
                # Refused without a call (`refused_unasked`): sent anew now, no turn waited for in the chat's pace.
                if row.op == "delete":
                    row = self._to_edit(row, "the platform keeps it as it is")
                row = self._to_send(row, "the platform keeps it as it is")
            edit_of = target_id if row.op == "edit" else None
            progress = row.kind in PROGRESS_KINDS
            lookup = find_target or row.op in ("send", "file") and self.maybe_sent(row) and findable(adapter, row)
            # Looked up first: a part found to have gone out already gets no note, which would follow it.
            note = (late_note(self._store, row, age=self._clock.time() - row.created_at, late_after=self._late_after)
                    if row.op in ("send", "file") and not progress and not lookup else None)
            if note is not None:  # sent first, as a part of its own: it says how old what follows is
                if not await self._deliver(adapter, note, preempt):
                    return False
                stale = True
                continue
            pause = self._pacer.delay(row.chat, edit_of=edit_of, progress=progress,
                                      op="lookup" if lookup else account_op(row.op, edit_of))
            if pause > 0:
                if not await self._pacer.wait(pause, preempt):
                    return False
                stale = True
                continue
            if (held := self._holds.claim(row.platform, row.id)) > 0:  # held: another part tries for all
                if not await self._pacer.wait(held, preempt, self._holds.changed(row.platform)):
                    return False
                stale = True
                continue
            if not lookup:
                self._commit_before_call(row)
            try:
                if lookup:
                    # Counted from its start: the other chats' lookups keep their distance meanwhile.
                    self._pacer.account_called(row.platform, pacing, "lookup")
                    try:  # a NetworkError backs off below
                        found = await self._lookup.find_sent(adapter, target if find_target and target else row,
                                                             "sending its change anew" if find_target else "sending it")
                    except RateLimited as exc:  # asked again once the platform allows, as is every chat's lookup
                        self._pacer.account_called(row.platform, pacing, "lookup",
                                                   refused_for=min(exc.retry_after, self._max_retry_after))
                        self._holds.answered(row.platform)
                        self._events.rate_limited(row.platform, exc.retry_after)
                        if not await self._pacer.wait(min(exc.retry_after, self._max_retry_after), preempt):
                            return False
                        stale = True
                        continue
                    self._holds.answered(row.platform)
                    if find_target and target is not None:
                        asked = stale = True
                        if found is not None:
                            self._sent(target, found, pacing)  # this change edits or deletes it
                        else:
                            self._forget(target)
                        continue
                    if found is not None:
                        self._sent(row, found, pacing)
                        return True
                    stale = True
                    continue
                message_id = await self._attempt(adapter, pacing, row, target_id, edit_of, preempt)
            except SteppedAside:  # not made: the chat's answer, queued meanwhile, goes first
                self._holds.release(row.platform, row.id)
                return False
            except Closed as exc:
                self._holds.release(row.platform, row.id)  # no answer about the credentials either
                self._close(row, exc)
                return True
            except Exception as exc:
                stale = True
                unanswered = isinstance(exc, NetworkError) or not isinstance(exc, DeliveryError)
                if (unanswered or (lookup and isinstance(exc, Unauthorized))) and not find_target:
                    self._lookup.unsure.add(row.id)  # it may have gone out, its answer lost (or not asked about yet)
                if unanswered:
                    self._holds.release(row.platform, row.id)
                elif not isinstance(exc, Unauthorized):
                    self._holds.answered(row.platform)
                if row.op == "delete" and isinstance(exc, (*_EDIT_REFUSED, Forbidden)):
                    self._to_edit(row, type(exc).__name__)
                    undeletable = True
                    continue
                if row.op == "edit" and isinstance(exc, MessageTooLong):
                    # Edited with what fits: sent anew, the message it edits would read as it did, ⏳ for good.
                    await self._resplit(adapter, row, exc)
                    return True
                if row.op == "edit" and isinstance(exc, _EDIT_REFUSED):
                    # Still in the chat (NotFound: gone), also after a BadRequest (Discord's cap on edits of a
                    # message over an hour old, say); one that was the text's fault refuses the send too: none left.
                    if not isinstance(exc, NotFound) and progress and target_id is not None and not undeletable:
                        self._left_behind[row.id] = target_id
                    self._to_send(row, type(exc).__name__)
                    continue
                if row.op == "file" and isinstance(exc, _FILE_REFUSED):
                    self._fail(row, exc)
                    await self._send_note(row.id)
                    return True
                if isinstance(exc, MessageTooLong):
                    await self._resplit(adapter, row, exc)
                    return True
                if isinstance(exc, _FINAL):
                    self._fail(row, exc)
                    await self._send_note(row.id)
                    return True
                if isinstance(exc, RateLimited) and exc.called:  # not one the adapter held back itself
                    self._events.rate_limited(row.platform, exc.retry_after)
                if isinstance(exc, Unauthorized):  # every chat of the platform waits (logged once, there)
                    wait = self._holds.refused(row.platform, row.id, exc)
                elif isinstance(exc, RateLimited) and exc.retry_after > 0:
                    wait = min(exc.retry_after, self._max_retry_after)
                    # The chat, not just this message; and an op Slack counts per workspace, in every chat.
                    self._pacer.block(row.chat, wait, progress=progress, pacing=pacing,
                                      op=account_op(row.op, edit_of))
                else:  # NetworkError, 5xx, anything unexpected: worth another try, later
                    if not isinstance(exc, DeliveryError) and delay == BACKOFF_FIRST:
                        # An adapter bug rather than the platform: worth a traceback, once per part.
                        log.warning("outbox: %s adapter raised %s sending %s", row.platform, type(exc).__name__,
                                    row.key, exc_info=exc)
                    wait = delay * (0.75 + 0.5 * self._rng.random())
                    delay = min(delay * 2, BACKOFF_MAX)
                if isinstance(exc, Unauthorized):  # held: never given up meanwhile
                    self._store.record_attempt(row.id, describe(exc), self._clock.time() + wait)
                    if not await self._pacer.wait(wait, preempt, self._holds.changed(row.platform)):
                        return False
                    continue
                left = self._give_up.left(row)
                if left <= 0 and not _changes_progress(row):
                    self._fail(row, exc, gave_up=True)
                    await self._send_note(row.id)
                    return True
                if left > 0:
                    wait = min(wait, left)  # one last try at the deadline
                self._store.record_attempt(row.id, describe(exc), self._clock.time() + wait)
                self._log_retry(row, exc, wait)
                if not await self._pacer.wait(wait, preempt):
                    return False
                continue
            self._holds.answered(row.platform)
            self._sends_again(row)
            left_behind = self._left_behind.pop(row.id, None)
            self._sent(row, message_id, pacing)
            if left_behind is not None and row.op == "send" and left_behind != message_id:
                await self._delete_left_behind(adapter, pacing, row, left_behind, preempt)
            return True

    async def _delete_left_behind(self, adapter: Adapter, pacing: Pacing, row: OutboxRow, message_id: str,
                                  preempt: asyncio.Event | None) -> None:
        """The platform refused an edit of a progress message (`EditUnsupported`, `BadRequest`), so ``row`` sent its
        state as a new message, which later edits follow: the one it was to edit would read ``⏳ …`` for good above
        it. It is deleted where the platform can; else, or when the deletion is refused or fails, it is left as it is,
        logged. Never edited to say so: an edit of it was just refused. Tried once and not journaled: a process
        that stops first leaves it, as it always did."""
        if not isinstance(adapter, Deleting):  # at every edit of a platform that takes none (webhooks): DEBUG
            log.debug("outbox: %s chat %s: %s was sent anew; the message it was to edit is left as it is (the "
                      "platform cannot delete it)", row.platform, row.chat_id, row.key)
            return
        if refused_unasked(adapter, row.chat_id, message_id):  # learned since the edit was refused (an upgrade)
            log.info("outbox: %s chat %s: %s was sent anew; the message it was to edit is left as it is (the "
                     "platform keeps it as it is)", row.platform, row.chat_id, row.key)
            return
        pause = self._pacer.delay(row.chat, progress=True, op="delete")
        if pause > 0 and not await self._pacer.wait(pause, preempt):
            log.info("outbox: %s chat %s: %s was sent anew; the message it was to edit is left as it is (the chat "
                     "has more to send)", row.platform, row.chat_id, row.key)
            return
        self._pacer.called(row.chat, pacing, op="delete")
        try:
            await adapter.delete(row.chat_id, row.thread_id, message_id)
        except Exception as exc:  # a refusal, an outage, a shutdown: nothing here is worth more than one try
            log.info("outbox: %s chat %s: %s was sent anew; the message it was to edit is left as it is (%s)",
                     row.platform, row.chat_id, row.key, type(exc).__name__)
        else:
            log.info("outbox: %s chat %s: %s was sent anew; the message it was to edit is deleted", row.platform,
                     row.chat_id, row.key)
        finally:
            self._pacer.called(row.chat, pacing, op="delete")

    def _log_retry(self, row: OutboxRow, exc: BaseException, wait: float) -> None:
        """Every chat retries through an outage or a rate limit at once: said once, not once per part and try
        (the platform's adapter warns of the failure; the console shows each part's last error)."""
        line = ("outbox: %s chat %s: %s %s; retrying in %.1fs", row.platform, row.chat_id, row.key, describe(exc),
                wait)
        outage = _outage_of(row)
        if isinstance(exc, RateLimited):
            self._rate_limits.warning(outage, *line)
            return
        now = self._clock.monotonic()
        failing = self._failing.get(outage)
        if failing is None or now - failing[1] > FAILURE_OVER_AFTER:
            self._failing[outage] = (now, now, 0)
            log.info(line[0] + " (and the retries of any part of %s at DEBUG until one goes out)", *line[1:], outage)
        else:
            self._failing[outage] = (failing[0], now, failing[2] + 1)
            log.debug(*line)

    def _sends_again(self, row: OutboxRow) -> None:
        """``row`` went out: a failure of its platform's (its webhook route's) calls ends (its reads may have come
        back first)."""
        now = self._clock.monotonic()
        outage = _outage_of(row)
        if (failing := self._failing.pop(outage, None)) is not None and now - failing[1] <= FAILURE_OVER_AFTER:
            log.info("outbox: %s sends again after %.0f s of failed calls (%d more retries meanwhile)", outage,
                     now - failing[0], failing[2])

    def _sent(self, row: OutboxRow, message_id: str, pacing: Pacing) -> None:
        self._forget(row)
        if row.op == "send":
            self._pacer.called(row.chat, pacing, edit_of=message_id)  # a new message's first edit waits too

        def record() -> None:
            self._store.mark_sent(row.id, message_id)
            if row.op == "send" and row.target_key is not None:
                self._store.set_message_id(row.target_key, message_id)  # later edits edit this one
            self._events.settled(row, "sent")
            self._settle_cb(row.key, message_id)

        self._record(row.id, record)

    def _record(self, row_id: int, record: Callable[[], None]) -> None:
        """Write a row's outcome to the store. Should the store raise, the outcome is kept for
        the next `deliver` of the row, which then only records it (see ``_unrecorded``)."""
        self._unrecorded[row_id] = record
        record()
        del self._unrecorded[row_id]

    def _record_again(self, row_id: int) -> bool:
        """Record the outcome the store failed to take before; False when there is none."""
        record = self._unrecorded.get(row_id)
        if record is None:
            return False
        self._record(row_id, record)
        return True

    async def _finish(self, row_id: int) -> bool:
        """Finish what the store failed under for a part whose outcome is known: record it (`_record_again`), and
        send the note journaled in its place (`_send_note`). False when there is nothing to finish."""
        if not self._record_again(row_id) and row_id not in self._notes:
            return False
        await self._send_note(row_id)
        return True

    def maybe_seen(self, row: OutboxRow) -> bool:
        """Whether a pending ``row`` may be in the chat already: an attempt at it is under way,
        or an earlier one may have reached the platform (`maybe_sent`). False while it waits for
        its first try or for a retry after the platform refused it (a 429)."""
        return row.id in self._attempting or self.maybe_sent(row)

    def look_up_failed(self, row: OutboxRow) -> bool:
        """`SentLookup.look_up_failed`: whether a failed progress message may be in the chat, and can be asked for."""
        return self._lookup.look_up_failed(row)

    def maybe_sent(self, row: OutboxRow) -> bool:
        """`SentLookup.maybe_sent`: whether an earlier attempt at ``row`` may have reached the platform unseen."""
        return self._lookup.maybe_sent(row)

    def _forget(self, row: OutboxRow) -> None:
        self._give_up.forget(row.id)
        self._lookup.forget(row.id)
        self._left_behind.pop(row.id, None)

    async def _attempt(
        self, adapter: Adapter, pacing: Pacing, row: OutboxRow, target_id: str | None, edit_of: str | None,
        preempt: asyncio.Event | None = None,
    ) -> str:
        self._attempting.add(row.id)
        op = account_op(row.op, edit_of)
        # Counted from now as well as from its answer: another sender of the chat (another topic
        # of a forum group) must not call alongside it, the platform counting both.
        # Not a card's first send: stepping aside, it would follow the answer, news of work over.
        aside = preempt if row.kind in PROGRESS_KINDS and edit_of is not None else None
        uncount = self._pacer.called(row.chat, pacing, edit_of=edit_of, op=op)
        # A progress message's write gives way to the other chats' answers where the adapter keeps the
        # account's rate (`platforms.pacing.AccountRate`), as it gives way to its own chat's here.
        gives_way = GIVES_WAY.set(row.kind in PROGRESS_KINDS)
        steps_aside = STEPS_ASIDE.set(aside)
        made = True
        try:
            if row.op == "delete" and target_id is not None:
                await adapter.delete(row.chat_id, row.thread_id, target_id)  # type: ignore[attr-defined]
                return target_id
            if row.op == "edit" and target_id is not None:
                await adapter.edit(row.chat_id, row.thread_id, target_id, row.text)
                return target_id
            if row.op == "file":
                return await self._send_file(adapter, row)
            return (await adapter.send(outbound(row))).message_id
        except SteppedAside:
            made = False
            uncount()  # no call made: the answer it stepped aside for is not held by the chat's pace from it
            raise
        finally:
            GIVES_WAY.reset(gives_way)
            STEPS_ASIDE.reset(steps_aside)
            self._attempting.discard(row.id)
            if made:
                self._pacer.called(row.chat, pacing, edit_of=edit_of, op=op)

    async def _send_file(self, adapter: Adapter, row: OutboxRow) -> str:
        """Upload the copy `send_file` kept for ``row``, its text the caption. A copy that has gone
        (removed by hand) or a platform that no longer takes files is final: BadRequest."""
        file = self._files.get(row.key) if self._files is not None else None
        if file is None:
            raise BadRequest("the gateway's copy of the file to send is gone", chat_id=row.chat_id,
                             platform=row.platform)
        if not isinstance(adapter, SendsFiles):
            raise BadRequest(f"{row.platform} cannot send files", chat_id=row.chat_id, platform=row.platform)
        return (await adapter.send_file(outbound(row), file)).message_id

    async def _send_note(self, row_id: int) -> None:
        """Send the note journaled in the failed part ``row_id``'s place, if one is owed (`_notes`). It stays owed
        until its send returns: the store failing under it (the commit before the call), the part's next `deliver`
        sends it; else it would wait, pending, for the next start, after what was queued behind the part."""
        if (note_id := self._notes.get(row_id)) is not None:
            await self.deliver(note_id)
            self._notes.pop(row_id, None)

    def _target(self, row: OutboxRow) -> OutboxRow | None:
        return self._store.message(row.target_key) if row.target_key else None

    def _drop_change_of_withdrawn(self, row: OutboxRow, why: str) -> None:
        """An edit or deletion of a progress message withdrawn before it went out (`Outbox.withdraw`),
        or not found to have gone out when the platform was asked: sent anew, as for any edit without
        a message, it would appear after the answer."""
        self._forget(row)
        self._store.drop([row.id])
        log.log(logging.DEBUG if why == NEVER_WENT_OUT else logging.INFO, "outbox: %s chat %s: %s dropped: %s %s",
                row.platform, row.chat_id, row.key, row.target_key, why)
        self._settle_cb(row.key, None)

    def _to_send(self, row: OutboxRow, reason: str) -> OutboxRow:
        """An edit that cannot be: from now on (restarts included) this row sends a new message."""
        log.info("outbox: %s chat %s: %s cannot edit %s (%s); sending it anew", row.platform, row.chat_id, row.key,
                 row.target_key, reason)
        self._store.set_op(row.id, "send")
        return dataclasses.replace(row, op="send")

    def _to_edit(self, row: OutboxRow, reason: str) -> OutboxRow:
        """A delete that cannot be: from now on this row edits the message to its text instead."""
        log.info("outbox: %s chat %s: %s cannot delete %s (%s); editing it instead", row.platform, row.chat_id,
                 row.key, row.target_key, reason)
        self._store.set_op(row.id, "edit")
        return dataclasses.replace(row, op="edit")

    async def _resplit(self, adapter: Adapter, row: OutboxRow, exc: MessageTooLong) -> None:
        if not (parts := resplit.pieces(adapter, row, one_message=row.kind in PROGRESS_KINDS)):
            self._fail(row, exc)
            await self._send_note(row.id)
            return
        self._store.add_messages(parts)
        self._store.set_op(row.id, "split")
        log.info("outbox: %s chat %s: %s too long for the platform; re-split in %d%s", row.platform, row.chat_id,
                 row.key, len(parts), " (what fits of a progress message)" if row.kind in PROGRESS_KINDS else "")
        await self._send_pieces(adapter, row)

    async def _send_pieces(self, adapter: Adapter, row: OutboxRow) -> None:
        """Send the pieces in the row's place; the row then stands for its first sent piece. A piece that
        fails for good once another went out gets the note a missing part does (`part_notes.missing_note`),
        in its place; one failing before any went out gets it after the first that does (as the pieces
        go; resumed after a restart too), and the row, none going out, its own: never a silent hole."""
        first: str | None = None
        refused = False  # a piece failed (not dropped)
        unnoted: OutboxRow | None = None  # the first piece that failed while none had gone out
        for listed in self._store.pieces(row.key):
            # As it is now: an earlier piece's wait (a 429) may have outlasted this one's drop (dismissed by
            # the operator, or withdrawn with its card, `Outbox.drop`), and a dropped piece is never sent.
            piece = self._store.message_by_id(listed.id) or listed
            if piece.status == "pending" or piece.id in self._notes:  # a failed piece's note: the store failed under it
                await self._deliver(adapter, piece, None)
                piece = self._store.message_by_id(piece.id) or piece
                if piece.status == "pending":  # the platform is `Closed`: the next start sends the rest
                    return
            if piece.status == "sent" and first is None:
                first = piece.message_id
                if unnoted is not None:  # journaled once: resumed, one sent before is not sent again
                    if (note := missing_note(self._store, unnoted, gave_up=gave_up_on(unnoted),
                                             files=self._files)) is not None:
                        self._notes[unnoted.id] = note.id
                    await self._send_note(unnoted.id)
            if piece.status == "failed" and first is None and unnoted is None:
                unnoted = piece
            refused = refused or piece.status == "failed"
        self._forget(row)  # its pieces are sent in its place: it is not tried again
        if first is None:
            with self._store.transaction():  # with its note, as in `_fail`: refused, the row stays as it was
                self._store.mark_failed(row.id, "MessageTooLong: no piece of the re-split message was sent")
                note = missing_note(self._store, row, files=self._files) if refused else None
            if note is not None:
                self._notes[row.id] = note.id
        else:
            self._store.mark_sent(row.id, first, attempted=False)
            if row.target_key is not None:
                self._store.set_message_id(row.target_key, first)
        self._settle_cb(row.key, first)
        await self._send_note(row.id)

    def _fail(self, row: OutboxRow, exc: BaseException, *, gave_up: bool = False) -> None:
        tried = self._give_up.tried(row.id)
        maybe_sent = self.maybe_sent(row)  # an answer lost on the way: it may be in the chat all the same
        self._forget(row)
        age = f" after {tried:.0f}s of retries" if gave_up else ""
        error = describe(exc)  # masked as it is made (`outbox_part.describe`): once, for the log and the store
        line = ("outbox: %s chat %s: %s failed%s: %s", row.platform, row.chat_id, row.key, age, error)
        if _refuses_chat(row, exc):
            self._chat_refusals.warning((row.platform, row.chat_id, error), *line)
        elif row.kind in _LOST_WHEN_FAILED and row.op in ("send", "file"):
            log.error(*line)  # what the chat asked for, lost: its note at most reaches the chat
        else:
            log.warning(*line)

        def record() -> None:
            # The note owed in its place (`part_notes.missing_note`) is journaled with it: a note the store refuses
            # leaves the part pending, its failure recorded again with the note (next `deliver`, or the next start
            # tries it again), never recorded alone with no note to come.
            with self._store.transaction():
                self._store.mark_failed(row.id, error, maybe_sent=maybe_sent)
                pass_quote(self._store, row, self._unspent)
                note = self._missing_note(row, gave_up=gave_up, unsure=gave_up and maybe_sent)
            if note is not None:
                self._notes[row.id] = note.id
            self._events.settled(row, "failed")
            self._settle_cb(row.key, None)

        self._record(row.id, record)

    def _missing_note(self, row: OutboxRow, *, gave_up: bool, unsure: bool) -> OutboxRow | None:
        """`part_notes.missing_note`, for `_fail`. A file whose copy cannot be read (an OSError, not the store's: a
        folder of another owner, a failing disk) is noted without its name, which the copy holds, but with why it
        failed: raised, it undid the failure it is journaled with, every time, and the chat waited behind the file
        for ever."""
        try:
            return missing_note(self._store, row, gave_up=gave_up, files=self._files, unsure=unsure)
        except OSError as exc:
            log.warning("outbox: %s chat %s: the copy of %s cannot be read (%s); its note names no file",
                        row.platform, row.chat_id, row.key, type(exc).__name__)
            return missing_note(self._store, row, gave_up=gave_up, unsure=unsure, unreadable=exc)

    async def _settle_final(self, adapter: Adapter | None, row: OutboxRow, preempt: asyncio.Event | None) -> bool:
        """Report a row already in a final state (dropped or dismissed meanwhile, say): its
        message id when sent, else None. A row dropped while an attempt at it lost its answer
        (a progress card withdrawn mid-send, in this process or before a crash) may be in the
        chat all the same: where the platform can be asked, it is, and one found is recorded
        sent, so the edit or deletion queued behind it finishes it instead of leaving it for good.
        False when ``preempt`` was set while the lookup waited its turn or a 429 (the row is still unsettled)."""
        if self._lookup.withdrawn_maybe_sent(adapter, row) and isinstance(adapter, FindsSent):
            # A lookup as any other: it takes its turn among the platform's reads (a restart withdrawing
            # many cards asked for them all at once, drawing 429s), a refusal of it holds them all, and it
            # waits out a hold for the credentials (each card asked with the refused token, and stayed as it
            # was, `⏳` for good, once the token was fixed).
            pacing = pacing_of(adapter, row.chat_id)
            while (pause := self._pacer.delay(row.chat, progress=True, op="lookup")) > 0 \
                    or (pause := self._holds.claim(row.platform, row.id)) > 0:
                if not await self._pacer.wait(pause, preempt, self._holds.changed(row.platform)):
                    return False
            self._pacer.account_called(row.platform, pacing, "lookup")
            try:
                found = await self._lookup.find_sent(adapter, row, "it was withdrawn, so it stays as it is")
            except RateLimited as exc:  # asked again once the platform allows
                self._holds.answered(row.platform)
                self._pacer.account_called(row.platform, pacing, "lookup",
                                           refused_for=min(exc.retry_after, self._max_retry_after))
                self._events.rate_limited(row.platform, exc.retry_after)
                if not await self._pacer.wait(min(exc.retry_after, self._max_retry_after), preempt):
                    return False
                return await self._settle_final(adapter, row, preempt)
            except Unauthorized as exc:  # held: asked again once the platform takes the token
                self._lookup.unsure.add(row.id)
                wait = self._holds.refused(row.platform, row.id, exc)
                if not await self._pacer.wait(wait, preempt, self._holds.changed(row.platform)):
                    return False
                return await self._settle_final(adapter, row, preempt)
            except NetworkError as exc:  # an outage: a withdrawn card is not worth holding for
                self._holds.release(row.platform, row.id)
                self._events.looked_up(row.platform, "unknown")
                log.warning("outbox: %s chat %s: cannot tell whether %s went out already (%s); it was withdrawn, "
                            "so it stays as it is", row.platform, row.chat_id, row.key, describe(exc))
                found = None
            else:
                self._holds.answered(row.platform)
            if found is not None:
                self._sent(row, found, pacing)
                return True
        self._forget(row)
        self._settle_cb(row.key, row.message_id if row.status == "sent" else None)
        return True
