"""Handing a live Slack event to the gateway before its ack, and what becomes of it once settled.

Apart from the adapter (`platforms.slack`) because it is the one place that decides when Slack is acked for
an event (the sink done, or ``sink_timeout`` past), what a failure before or after that ack means (Slack sends
it again, or the adapter hands it over again), and how far its conversations are then recorded as taken in
(`platforms.slack_seen`). The adapter keeps its state (the sink, whether it stops, the catch-up) and hands
in how to read it. Logged under ``platforms.slack``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable

from platforms.base import DeliveryError, Inbound, InboundSink
from platforms.not_recorded import Handing, storage_refusal
from platforms.slack_catchup import CatchUp
from platforms.slack_handover import COMMAND, Retries, until_taken
from platforms.slack_inbound import Taken
from platforms.slack_seen import TakenIn
from platforms.slack_unacked import Stopping
from platforms.slack_under_way import UnderWay

log = logging.getLogger("platforms.slack")


class Delivery:
    """The hand-over of the adapter's live events: ``sink()``, ``stopping()``, ``turning_away()`` and
    ``catch_up()`` read the adapter's state at the moment it matters."""

    def __init__(self, *, sink: Callable[[], InboundSink | None], stopping: Callable[[], bool],
                 turning_away: Callable[[], bool], catch_up: Callable[[], CatchUp | None], taken_in: TakenIn,
                 under_way: UnderWay, retries: Retries, sink_timeout: float) -> None:
        self._sink, self._stopping, self._turning_away, self._catch_up = sink, stopping, turning_away, catch_up
        self._taken_in, self._under_way, self._retries = taken_in, under_way, retries
        self._sink_timeout = sink_timeout

    async def deliver(self, inbound: Inbound, taken: Taken | None = None, *, arrived: float | None = None) -> None:
        """Hand over before the ack, so a failing sink means Slack redelivers; a sink not done
        ``sink_timeout`` after the request ``arrived`` (the event loop's clock; None: now) finishes in the
        background rather than push the ack past 3 seconds, as does
        a message that waits until the catch-up has handed on the older ones of its conversations
        (`CatchUp.hand_on_after`). A message (``taken``) is recorded as taken in once the gateway
        has it; until then, and for good if it never is, its conversations are recorded no further than
        just before it (`platforms.slack_seen`): Slack may have been acked for it already. Once
        acked, a store refusing it is tried again; a slash command's from the start, as Slack never sends
        one again, until the adapter stops (`UnderWay.command_settled`). Once the
        adapter is stopping nothing new starts: a command is answered to be sent again, and a message
        raises `Stopping`, unacked, for Slack to send it again to the next process, its conversations
        recorded no further than just before it, for the next start to read it back should Slack give up."""
        loop = asyncio.get_running_loop()
        # Counted from the request's arrival: time spent queued for its signature check or reading files is spent.
        acked_by = (loop.time() if arrived is None else arrived) + self._sink_timeout
        sink, catch_up = self._sink(), self._catch_up()
        if sink is None or self._turning_away():
            if inbound.is_command:
                self._under_way.unanswered.append(inbound)
                return
            if taken is not None:  # for the next start to read it back, should Slack give up on it meanwhile
                self._taken_in.not_taken(taken.conversations, taken.ts, told=True)
            raise Stopping(f"slack adapter stopping: {inbound.event_id} left for Slack to send again")
        after = taken.conversations if taken is not None else ()
        waits = catch_up if catch_up is not None and catch_up.holds(after) else None
        was_acked = asyncio.Event()
        if inbound.is_command:
            handing = Handing(functools.partial(sink, inbound))
            hand_on = functools.partial(until_taken, handing, inbound, lambda: not self._stopping(), COMMAND)
        else:
            hand_on = functools.partial(until_taken, functools.partial(sink, inbound), inbound, was_acked.is_set)
        task = asyncio.ensure_future(waits.hand_on_after(after, hand_on) if waits else hand_on())
        self._under_way.tasks.add(task)
        task.add_done_callback(self._under_way.tasks.discard)
        if taken is not None:
            self._taken_in.handing_on(after, taken.ts)
            task.add_done_callback(lambda done: self.settled(taken, done, was_acked.is_set()))
        elif inbound.is_command:
            self._under_way.commands.add(task)
            task.add_done_callback(self._under_way.commands.discard)
            task.add_done_callback(functools.partial(self._under_way.command_settled, inbound, handing,
                                                     was_acked.is_set))
        # Not wait_for: the task goes on past the wait, and one that ended just as it timed out counts as ended.
        done, _ = await asyncio.wait({task}, timeout=max(0.0, acked_by - loop.time()))
        if done:
            if not inbound.is_command:  # a failure leaves it unacked; a command's is answered (`command_settled`)
                task.result()
            return
        was_acked.set()
        if waits is None:  # else the catch-up says so, should it take long
            log.warning("slack sink slow for %s; acking before it finished", inbound.event_id)

    def settled(self, taken: Taken, done: asyncio.Future[None], acked: bool) -> None:
        if not done.cancelled() and (exc := done.exception()) is not None and not acked:
            routine = storage_refusal(exc) or isinstance(exc, DeliveryError)  # else a bug: with its traceback
            log.warning("slack: message %s was not taken by the gateway (%s: %s); not acknowledged, so Slack sends"
                        " it again", taken.inbound.event_id, type(exc).__name__, exc, exc_info=None if routine else exc)
            self._taken_in.sent_again(taken.conversations, taken.ts)
            # Slack may give up: handed over again here meanwhile.
            if storage_refusal(exc) and (sink := self._sink()) is not None and not self._turning_away():
                self._retries.refused(taken.inbound, sink, lambda again: self.settled(taken, again, True))
        elif done.cancelled() or done.exception() is not None:  # a stop, or a store refusing it once acked
            self._taken_in.not_taken(taken.conversations, taken.ts)
        else:
            self._retries.taken(taken.inbound)
            self.record_seen(taken)

    def record_seen(self, taken: Taken) -> None:
        catch_up = self._catch_up()
        self._taken_in.taken(taken.conversations, taken.ts, [
            where for where in taken.conversations if catch_up is None or catch_up.record_now(where, taken.ts)])
