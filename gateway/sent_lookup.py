"""Whether a part may be in the chat already, and asking the platform before it is sent again.

An attempt whose answer was lost (a network error, a 5xx, a process that died sending) may have
reached the platform all the same; sent again blind, it would show twice. `SentLookup` keeps
what the sender knows of such doubts between attempts and asks an adapter that can look a post
up (`platforms.base.FindsSent`). It stands apart from `gateway.sender` because it answers one
question, "could this have gone out?", which the delivery loop, the settling of a withdrawn
part and the outbox's withdrawal of a card all ask.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from gateway.events import GatewayEvents
from gateway.outbox_part import PROGRESS_KINDS, describe, findable, outbound
from gateway.pacing import Pacer, pacing_of
from gateway.store import OutboxRow
from platforms.base import Adapter, FindsSent, NetworkError, RateLimited, Unauthorized

log = logging.getLogger("gateway.outbox")


class SentLookup:
    def __init__(self, adapters: Mapping[str, Adapter], pacer: Pacer, events: GatewayEvents, *,
                 last_before: int, max_retry_after: float) -> None:
        self._adapters, self._pacer, self._events = adapters, pacer, events
        self._max_retry_after = max_retry_after
        self.last_before = last_before
        """Parts above it were journaled by this process: the last one cannot have tried them. Told by
        id, not time: the wall clock may have been stepped back since the last process ran."""
        self.unsure: set[int] = set()
        """Parts whose last attempt may have reached the platform unseen (a network error, a 5xx)."""
        self.accounted: set[int] = set()
        """Parts journaled before the start that this process marked tried, or asked the platform about."""
        self.waited: set[int] = set()
        """Parts whose lookup was rate-limited once: the next refusal sends them."""

    @property
    def remembered_ids(self) -> set[int]:
        """The parts this keeps something about (none once final)."""
        return self.unsure | self.accounted | self.waited

    def requeued(self, row: OutboxRow) -> None:
        """The operator re-queued ``row``: one tried may be in the chat, and is looked up first, from when it
        was first journaled. That time is read from the row (`OutboxRow.lookup_since`),
        stored, not kept here: the next process, which finds the row tried, starts there too. Kept in memory
        only, a restart before the part went out started its lookup at the re-queue, and posted it twice."""
        if row.tried and row.op in ("send", "file"):
            self.unsure.add(row.id)

    def forget(self, row_id: int) -> None:
        self.unsure.discard(row_id)
        self.accounted.discard(row_id)
        self.waited.discard(row_id)

    def look_up_failed(self, row: OutboxRow) -> bool:
        """Whether the progress message ``row``, whose send failed, may be in the chat all the same and
        the platform can be asked: its answers were lost until it was given up on (it is still ``tried``,
        `OutboxRows.mark_failed`). Its next change then asks first, and edits or deletes the one found: sent
        anew, or left alone with the turn over, that one would read ``⏳`` for good."""
        if not (row.status == "failed" and row.op == "send" and row.message_id is None and row.tried
                and row.kind in PROGRESS_KINDS and findable(self._adapters.get(row.platform), row)):
            return False
        self.unsure.add(row.id)
        return True

    def maybe_sent(self, row: OutboxRow) -> bool:
        """Whether an earlier attempt at ``row`` may have reached the platform unseen: its answer
        was lost, or the last process tried it (it may have died sending it; one it never tried, marked
        so in the store, cannot have gone out)."""
        earlier = row.tried and row.id <= self.last_before and row.id not in self.accounted
        return row.id in self.unsure or earlier

    def withdrawn_maybe_sent(self, adapter: Adapter | None, row: OutboxRow) -> bool:
        """A dropped part the platform can be asked about, which may have gone out all the same."""
        maybe_sent = row.id in self.unsure or (row.op == "send" and self.maybe_sent(row))
        return row.status == "dropped" and maybe_sent and findable(adapter, row)

    async def find_sent(self, adapter: FindsSent, row: OutboxRow, unknown: str = "sending it") -> str | None:
        """Ask the platform whether ``row`` went out already; None (send it) when it did not or
        cannot tell (logged with ``unknown``, what then happens). Raises `RateLimited` the first
        time the platform says to ask later, and `NetworkError` whenever it cannot be reached: an
        outage that lost the answer to a post often loses the lookup too, and sending then, blind,
        would post it twice once it is over."""
        self.unsure.discard(row.id)
        self.accounted.add(row.id)
        try:
            found = await adapter.find_sent(outbound(row), row.lookup_since)
        except RateLimited as exc:
            if row.id not in self.waited:
                self.waited.add(row.id)
                self.unsure.add(row.id)
                raise
            # Sent blind now, but the other chats' lookups wait the refusal out all the same.
            self._pacer.account_called(row.platform, pacing_of(adapter, row.chat_id), "lookup",
                                       refused_for=min(exc.retry_after, self._max_retry_after))
            self._events.rate_limited(row.platform, exc.retry_after)  # the caller counts only those raised to it
            error: BaseException = exc
        except (NetworkError, Unauthorized):
            raise  # the caller marks it unsure again and backs off, or holds the platform
        except Exception as exc:
            error = exc
        else:
            self._events.looked_up(row.platform, "not_found" if found is None else "found")
            if found is not None:
                log.info("outbox: %s chat %s: %s had gone out already; not sent again", row.platform, row.chat_id,
                         row.key)
            return found
        self._events.looked_up(row.platform, "unknown")
        log.warning("outbox: %s chat %s: cannot tell whether %s went out already (%s); %s", row.platform,
                    row.chat_id, row.key, describe(error), unknown)
        return None
