"""Reading a Slack conversation back: pages of a channel's history or a thread's replies, with
message metadata, and the part the gateway posted under an idempotency key.

Apart from the adapter (`platforms.slack`) because it is the one read of Slack's history that
the adapter's lookups share: `find_sent`, the placeholders left behind
(`platforms.slack_placeholders`) and the catch-up (`platforms.slack_catchup`) all page through it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from platforms.base import BadRequest, Outbound, RateLimited
from platforms.http_dates import date_of

log = logging.getLogger("platforms.slack")

SENT_EVENT = "switchboard_part"
"""The metadata ``event_type`` of the messages the gateway posts; the payload's ``key`` is the
part's idempotency key, which `find_sent` looks for."""
LOOKUP_LIMIT = 200
"""Messages per page of a conversation that `find_sent` and `clear_left_behind` read."""
LOOKUP_PAGES = 5
"""Pages `find_sent` reads at most: a busy channel's thousand messages since the part was journaled.
Each page is one call of a method Slack allows about fifty times a minute."""
_CLOCK_SKEW = 60.0

Page = Callable[..., Awaitable[tuple[list[dict[str, Any]], "str | None"]]]
"""`page` bound to the adapter's Web API call: ``page(chat_id, thread_id, cursor=..., **kw)``."""


class Metadata:
    """Posts carry message metadata (what `find_sent` and the placeholders' clean-up look for), until
    Slack refuses it once: then none do."""

    def __init__(self) -> None:
        self._on = True

    async def post(self, post: Callable[..., Awaitable[Any]], metadata: dict[str, Any] | None) -> Any:
        """``post(metadata=...)``, or ``post()`` once Slack has refused message metadata: then the
        gateway still works, but cannot look up its posts or its placeholders any more."""
        if metadata is None or not self._on:
            return await post()
        try:
            return await post(metadata=metadata)
        except BadRequest as exc:
            if "metadata" not in str(exc):
                raise
            self._on = False
            log.warning("slack: Slack refused message metadata (%s); posting without it from now on, so a post "
                        "whose answer is lost may be sent twice and a crash may leave a placeholder behind", exc)
            return await post()


async def page(
    api: Callable[..., Awaitable[Any]], chat_id: str, thread_id: str | None, *, cursor: str | None = None, **kw: Any
) -> tuple[list[dict[str, Any]], str | None]:
    """One page (`LOOKUP_LIMIT`) of a thread's replies or a channel's history, with metadata,
    and the cursor of the next page (None after the last)."""
    kw.update(channel=chat_id, include_all_metadata=True, limit=LOOKUP_LIMIT)
    if cursor:
        kw["cursor"] = cursor
    if thread_id:
        resp = await api("conversations.replies", chat_id, ts=thread_id, **kw)
    else:
        resp = await api("conversations.history", chat_id, **kw)
    messages = Messages(resp.get("messages") or [])
    messages.answered_at = _date(getattr(resp, "headers", None) or {})
    return messages, (resp.get("response_metadata") or {}).get("next_cursor") or None


class Messages(list[dict[str, Any]]):
    """A page of messages, and when Slack answered it by its own clock: what the catch-up reads the time on,
    the host's clock being possibly wrong by minutes or days (a drifted VM, a board without a battery clock)."""

    answered_at: float | None = None
    """Epoch seconds, from the answer's ``Date`` header (whole seconds); None without one."""


def _date(headers: Any) -> float | None:
    return date_of(headers.get("Date") or headers.get("date")) if hasattr(headers, "get") else None


class PacedReads:
    """`page` for the adapter's own reads (the catch-up, the placeholders' clean-up): each waits its
    turn among the outbox's lookups (`find_sent`, which the outbox paces itself), as they read the same
    methods, Tier 3 per workspace; a 429 on one holds them all. ``turn`` and ``wrote`` are the
    outbox's (`platforms.pacing.WaitsAside`, `WritesAside`), once bound: until then reads go at once."""

    def __init__(self, read: Page) -> None:
        self._read = read
        self.turn: Callable[..., Awaitable[None]] = _at_once
        self.wrote: Callable[..., None] = _counted_nowhere

    async def __call__(
        self, chat_id: str, thread_id: str | None, *, cursor: str | None = None, **kw: Any
    ) -> tuple[list[dict[str, Any]], str | None]:
        await self.turn(chat_id, op="lookup")
        self.wrote(chat_id, op="lookup")
        try:
            return await self._read(chat_id, thread_id, cursor=cursor, **kw)
        except RateLimited as exc:
            self.wrote(chat_id, op="lookup", refused_for=exc.retry_after)
            raise


async def _at_once(chat_id: str, op: str | None = None) -> None:
    return None


def _counted_nowhere(chat_id: str, op: str | None = None, refused_for: float = 0.0) -> None:
    return None


def findable(message: Outbound) -> bool:
    """Whether `find_sent` can find ``message`` at all: a post carrying its key in its metadata. An
    answer to a slash command (``reply_token``) goes to the command's ``response_url`` or as an
    ephemeral message, which carry no metadata and which no conversation's history keeps; a part
    without a key was posted without metadata."""
    return not message.reply_token and bool(message.idempotency_key)


async def find_sent(read: Page, message: Outbound, since: float, clock: Callable[[], float] = time.time) -> str | None:
    """The ``ts`` of the message posted with this idempotency key in its conversation (the
    thread's replies, or the channel's history) since ``since`` (on ``clock``), reading at most
    `LOOKUP_PAGES` pages through ``read``; None, reading nothing, for one it cannot find (`findable`).
    Read again once, from further back, when Slack's first answer (`Messages.answered_at`) says ``clock``
    is ahead of Slack's by more than the margin: the ts are on Slack's clock, and a post was missed, so sent
    twice."""
    if not findable(message):
        return None
    oldest, ahead = since - _CLOCK_SKEW, None
    for _ in range(2):
        cursor = None
        for _ in range(LOOKUP_PAGES):
            page, cursor = await read(message.chat_id, message.thread_id, oldest=f"{max(0.0, oldest):.6f}",
                                      cursor=cursor)
            for found in page:
                metadata = found.get("metadata") or {}
                if metadata.get("event_type") == SENT_EVENT and \
                        (metadata.get("event_payload") or {}).get("key") == message.idempotency_key:
                    return str(found["ts"])
            if ahead is None and (answered_at := getattr(page, "answered_at", None)) is not None:
                ahead = clock() - answered_at
            if not cursor:
                break
        if ahead is None or ahead <= _CLOCK_SKEW:
            return None
        oldest = since - ahead - _CLOCK_SKEW
    return None
