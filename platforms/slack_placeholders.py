"""The Slack adapter's progress placeholder: Slack bots have no typing indicator.

`typing` posts one placeholder message per
chat/thread (later calls do nothing) and `idle` deletes it with ``chat.delete``; a failed
deletion is retried in the background, and `stop` deletes whatever is left; one whose post lost its
answer (a 5xx, no answer at all), so may be there unknown, is looked for and deleted by `idle`; one refused for
the bot token (revoked mid-turn) is deleted once a call succeeds again, and one refused because the bot can no longer
write to its channel (archived, the bot removed from it: `platforms.slack_membership.REFUSED`) once it may again
(`reopened`). Placeholders carry
metadata, so one a crashed process left behind (or could not delete) is found and deleted
after the restart (`clear_left_behind`, for the conversations whose turns run again or whose
replies are still to send, and those this adapter told the gateway it shows or could not
clean: `bind_indicators_left`, kept in the state database, and forgotten once deleted). A start's
clean-up that Slack cannot serve for now (an outage, a 429) is tried again, a bounded number of times
(`CLEAN_UP_TRIES`); one Slack refuses for good (the conversation gone, the bot out of it) is not kept for
the next start. A 429's ``Retry-After`` is waited ``delivery.max_retry_after`` at most, as the outbox waits it. No
placeholder is posted while the workspace's message limit holds (`platforms.slack_message_limit`), nor while
more deletions wait their turn than Slack takes in a minute (`DELETIONS_BEHIND`): ``chat.delete`` goes 50 a minute
across the workspace, each turn's end deletes one, and past that many turns ending a minute the deletions fell
further behind for as long as it lasted, each placeholder reading "working" under its answer longer than the last.

Apart from the adapter (`platforms.slack`) because it is a state of its own (the placeholders
shown, those whose deletion waits, those refused for the token) with its own retries; it calls
Slack only through the adapter's Web API call, so errors are translated there. Logged under
``platforms.slack``.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.errors import SlackApiError

from platforms.base import DeliveryError, IndicatorLeft, NetworkError, RateLimited, Unauthorized
from platforms.recent import remember
from platforms.slack_catchup import Where
from platforms.slack_errors import error_code
from platforms.slack_history import Page
from platforms.slack_membership import REFUSED
from platforms.slack_message_limit import MessageLimit

log = logging.getLogger("platforms.slack")

PLACEHOLDER_EVENT = "switchboard_placeholder"
"""The metadata ``event_type`` of progress placeholders, which `Placeholders.clear_left_behind` finds."""
CLEAN_UP_TRIES = 6
"""Reads of a conversation by a start's clean-up (`Placeholders.clear_left_behind`) while Slack cannot serve
it for now: the waits between them double from `CLEAN_UP_WAIT` to a minute (`MAX_WAIT`; or are Slack's
``Retry-After``, ``max_retry_after`` at most), about a minute in all; then it is left to the next start. Slack
down as the gateway starts (often why it restarted) would otherwise leave the placeholders in the chat until
some later restart."""
CLEAN_UP_WAIT = 2.0
MAX_WAIT = 60.0
"""Seconds a wait of the clean-up for an outage lasts at most."""
MAX_RETRY_AFTER = 60.0
"""Seconds a 429's ``Retry-After`` is waited at most, by the clean-up or before a deletion is tried again, unless
given another cap (the adapter's is ``delivery.max_retry_after``): Slack's rate limits count by the minute, and a
proxy's 86400 or far-off HTTP-date held a start's clean-up of the conversation for a day."""
DELETIONS_BEHIND = 50
"""Deletions waiting their turn (Slack's Tier 3: 50 a minute across the workspace) past which no new placeholder is
posted: each is a deletion more to wait, and a turn shows its answer, and its progress card, without one."""
KEPT_MOST = 10_000
"""Conversations `Placeholders` keeps from being said clean of placeholders (``_kept``), the most recently kept: one
more per conversation a failure left a placeholder in, for as long as the process runs."""
_RETRYABLE = (NetworkError, RateLimited)
"""A read or deletion Slack may take in a moment; any other refusal but the token's is for good."""


class Placeholders:
    """One placeholder per chat/thread. ``api`` is the adapter's Web API call (errors translated),
    ``with_metadata`` its post with metadata while Slack takes it, ``page`` its read of a page of a
    conversation (at most ``pages`` of them for a thread), ``background`` runs work the adapter's
    `stop` cancels, ``started`` says whether the adapter can post, ``limit`` is the workspace's message
    limit the adapter's posts share, and ``max_retry_after`` caps the wait of a 429's ``Retry-After``."""

    def __init__(self, *, text: str, api: Callable[..., Awaitable[Any]],
                 with_metadata: Callable[[Callable[..., Awaitable[Any]], dict[str, Any] | None], Awaitable[Any]],
                 page: Page, pages: int, background: Callable[[Awaitable[None]], None],
                 started: Callable[[], bool], limit: MessageLimit | None = None,
                 max_retry_after: float | None = None) -> None:
        self._placeholder_text = text
        self._limit = limit or MessageLimit()
        self._max_retry_after = MAX_RETRY_AFTER if max_retry_after is None else max_retry_after
        self._api, self._with_metadata, self._page, self._pages = api, with_metadata, page, pages
        self._background, self._started = background, started
        self._placeholders: dict[tuple[str, str | None], asyncio.Future[str | None]] = {}
        self._stale: dict[str, Where] = {}  # placeholder ts -> its conversation, deletion pending
        self._refused: dict[str, Where] = {}
        """Placeholders (ts -> conversation) whose deletion Slack refused for the bot token: deleted once
        a call succeeds again (a timed retry would only be refused again until someone fixes it), or
        by the next start (told to ``_left``, which the gateway keeps)."""
        self._barred: OrderedDict[str, Where] = OrderedDict()
        """Placeholders (ts -> conversation) whose deletion Slack refused because the bot can no longer write to the
        channel (archived, the bot removed, mid-turn): deleted once it may again (`reopened`), else the placeholder
        of the turn that loss stopped read "working" above the channel's later answers for good; `KEPT_MOST` at
        most. A restart meanwhile leaves them to the next start (told to ``_left``)."""
        self._say_left = self._say_shown = self._say_gone = _told_nothing
        self._kept: OrderedDict[Where, None] = OrderedDict()
        """Told to `_left` for what this process may not remove (a deletion refused or given up, a lost post):
        never said gone, so the next start looks there whatever later turns there delete; `KEPT_MOST` at most,
        least recently kept first."""
        self._forgot_kept = False
        self._deleting = 0
        """Deletions waiting their turn across the workspace (`_try_delete`): past `DELETIONS_BEHIND`, none posted."""
        self._behind = False
        self._wrote: Callable[..., None] = lambda chat_id, op=None, refused_for=0.0: None
        """Told of each placeholder post and deletion (`bind_writes`): the outbox paces the channel's
        messages, and deletions across the workspace (held there too by a deletion's 429)."""
        self._turn: Callable[..., Awaitable[None]] = _at_once
        """Awaited before each placeholder post (`bind_turns`): it waits for the channel's pace too;
        and before each deletion, for the workspace's (``chat.delete`` is Tier 3, as ``chat.update``)."""
        self._queued: set[tuple[str, str | None]] = set()
        """Chats/threads whose placeholder waits for its turn, not posted yet: `idle` drops it."""
        self._own_placeholders: set[str] = set()  # ts of those this process posted and has not deleted
        self._unsure: set[Where] = set()
        """Chats/threads where a placeholder's post lost its answer: it may be there, its ts unknown."""

    async def typing(self, chat_id: str, thread_id: str | None) -> None:
        """Post the placeholder once per chat/thread. The post runs in its own task, so a caller
        cancelled mid-post cannot lose the ts that `idle` needs to delete it."""
        key = (chat_id, thread_id)
        if key not in self._placeholders and self._started() and not self._deletions_behind():
            self._queued.add(key)
            self._placeholders[key] = asyncio.ensure_future(self._post_placeholder(chat_id, thread_id))
        future = self._placeholders.get(key)
        if future is None:
            return
        try:
            ts = await asyncio.shield(future)
        except asyncio.CancelledError:
            # Dropped by `idle` before its turn came: there is nothing to show; unless the caller is cancelled too.
            if future.cancelled() and not asyncio.current_task().cancelling():  # type: ignore[union-attr]
                return
            raise
        if ts is None and self._placeholders.get(key) is future:
            del self._placeholders[key]  # the post failed; the next refresh tries again

    def _deletions_behind(self) -> bool:
        """Whether more deletions wait their turn than Slack takes in a minute (`DELETIONS_BEHIND`), until half of
        them have gone (a backlog at the bound would start and end it at every turn); said as it begins and ends."""
        behind = self._deleting >= (DELETIONS_BEHIND // 2 if self._behind else DELETIONS_BEHIND)
        if behind and not self._behind:
            log.warning("slack: %d placeholder deletions wait their turn (Slack takes 50 a minute across the"
                        " workspace); no new placeholder is posted until they are under %d", self._deleting,
                        DELETIONS_BEHIND // 2)
        elif self._behind and not behind:
            log.info("slack: placeholder deletions caught up; placeholders are posted again")
        self._behind = behind
        return behind

    def bind_writes(self, wrote: Callable[..., None]) -> None:
        self._wrote = wrote

    def bind_turns(self, turn: Callable[..., Awaitable[None]]) -> None:
        self._turn = turn

    async def _post_placeholder(self, chat_id: str, thread_id: str | None) -> str | None:
        kw = {"thread_ts": thread_id} if thread_id else {}
        # A message like any other to Slack's one a second per channel: it waits its turn (posted
        # right after a message, it drew a 429), and the outbox counts it.
        try:
            await self._turn(chat_id)
        finally:
            self._queued.discard((chat_id, thread_id))
        if self._limit.held():  # none until the workspace may post again: the next refresh tries
            return None
        # Recorded before it is posted (in the store's batch, not a commit of its own): a kill before its
        # deletion, which waits a second past the reply's post, must still bring the next start here.
        self._say_shown(chat_id, thread_id)
        self._wrote(chat_id)
        try:
            with self._limit.posting("chat.postMessage", chat_id):
                resp = await self._with_metadata(
                    lambda **extra: self._api("chat.postMessage", chat_id, channel=chat_id,
                                              text=self._placeholder_text, **kw, **extra),
                    {"event_type": PLACEHOLDER_EVENT, "event_payload": {"kind": "placeholder"}})
        except NetworkError:
            # Slack may have posted it all the same (only its answer was lost): the refresh would post another,
            # and `idle` delete that one only. Looked for when the turn ends; by the next start should the
            # process die first.
            self._unsure.add((chat_id, thread_id))
            self._left(chat_id, thread_id)
            return None
        except DeliveryError:
            self._shown_no_more((chat_id, thread_id), posting=True)
            return None
        finally:
            self._wrote(chat_id)
        self._own_placeholders.add(resp["ts"])
        return resp["ts"]

    def bind_indicators_left(self, left: IndicatorLeft) -> None:
        self._say_left = left
        gone: IndicatorLeft | None = getattr(left, "gone", None)
        # Told of every post only where it is also told of the deletion: kept for good, each chat a turn
        # ran in would be read by every start.
        self._say_shown, self._say_gone = (left, gone) if gone else (_told_nothing, _told_nothing)

    def _left(self, chat_id: str, thread_id: str | None) -> None:
        if len(self._kept) >= KEPT_MOST and (chat_id, thread_id) not in self._kept:
            forgotten = next(iter(self._kept))
            # The gateway's record stays until a placeholder there is deleted; one this process left there then
            # stays in the chat.
            log.log(logging.DEBUG if self._forgot_kept else logging.WARNING,
                    "slack: placeholders may be left behind in more than %d conversations; %s is forgotten first"
                    " (a later turn's deletion there says it clean, and the next start does not look there)",
                    KEPT_MOST, forgotten[0])
            self._forgot_kept = True
        remember(self._kept, (chat_id, thread_id), None, KEPT_MOST)
        self._say_left(chat_id, thread_id)

    def _shown_no_more(self, where: Where, *, posting: bool = False) -> None:
        """Forget the chat's record once no placeholder of this process may be there: else every start
        would read every chat a turn ever ran in. Not while another is shown or its deletion waits."""
        if (where in self._kept or (not posting and where in self._placeholders)
                or where in self._stale.values() or where in self._refused.values() or where in self._barred.values()):
            return
        self._say_gone(*where)

    async def clear_left_behind(self, chat_id: str, thread_id: str | None) -> int:
        """Delete the placeholders an earlier process left in the conversation: among a channel's
        newest page (`platforms.slack_history.LOOKUP_LIMIT` messages), or in a thread's replies
        (``pages`` pages of them: they come oldest first, and the placeholder was among the last)."""
        found: set[str] = set()
        wait = CLEAN_UP_WAIT
        for tries in range(CLEAN_UP_TRIES, 0, -1):
            # Said as it begins and as it is given up, not at every try, for each conversation an outage holds.
            left, retry = await self._delete_unknown(chat_id, thread_id, warn=tries in (CLEAN_UP_TRIES, 1))
            found |= left
            if retry is None or tries == 1:
                break
            await asyncio.sleep(max(wait, retry))
            wait = min(wait * 2, MAX_WAIT)
        if found:
            log.info("slack: deleted %d placeholder(s) a previous run left in %s", len(found), chat_id)
        return len(found)

    async def _delete_unknown(self, chat_id: str, thread_id: str | None, *,
                              warn: bool = True) -> tuple[set[str], float | None]:
        """Delete the placeholders in the conversation that this process does not know it shows (as
        `clear_left_behind` finds them); returns the ts of those found, and the seconds to wait before
        looking again when Slack could not serve it all for now (None when done, or refused for good)."""
        left: list[str] = []
        cursor, retry = None, None
        for _ in range(self._pages if thread_id else 1):
            try:
                page, cursor = await self._page(chat_id, thread_id, cursor=cursor)
            except DeliveryError as exc:
                if not isinstance(exc, (*_RETRYABLE, Unauthorized)):  # the conversation gone, the bot out of it
                    log.warning("slack: cannot look for placeholders left behind in %s: %s; not looked for again",
                                chat_id, exc)
                    break
                log.log(logging.WARNING if warn else logging.DEBUG,
                        "slack: cannot look for placeholders left behind in %s: %s", chat_id, exc)
                self._left(chat_id, thread_id)  # the next start looks again
                if isinstance(exc, _RETRYABLE):
                    retry = min(exc.retry_after, self._max_retry_after) if isinstance(exc, RateLimited) else 0.0
                break
            left += [str(m["ts"]) for m in page
                     if (m.get("metadata") or {}).get("event_type") == PLACEHOLDER_EVENT
                     and str(m["ts"]) not in self._own_placeholders]
            if not cursor:
                break
        deleted: set[str] = set()
        for ts in left:
            if (wait := await self._try_delete((chat_id, thread_id), ts)) is not None:
                self._left(chat_id, thread_id)  # not now (a 429, an outage): the next start tries again
                retry = max(retry or 0.0, wait)
            elif ts not in self._barred:  # one refused as the channel takes nothing is still there
                deleted.add(ts)
        return deleted, retry

    async def idle(self, chat_id: str, thread_id: str | None) -> None:
        """Delete the chat's placeholder (waiting for a post still in flight), and one whose post lost its
        answer, looked for in the conversation. A deletion that failed for a retryable reason is retried in
        the background after ``Retry-After``; `stop` makes a last attempt."""
        await self._delete_shown(chat_id, thread_id)
        if (chat_id, thread_id) in self._unsure:
            self._unsure.discard((chat_id, thread_id))
            if found := (await self._delete_unknown(chat_id, thread_id))[0]:
                log.info("slack: deleted %d placeholder(s) in %s whose post had lost its answer", len(found), chat_id)

    async def _delete_shown(self, chat_id: str, thread_id: str | None) -> None:
        future = self._placeholders.pop((chat_id, thread_id), None)
        if future is None:
            return
        if (chat_id, thread_id) in self._queued:  # still waiting for its turn: never posted, nor waited for
            self._queued.discard((chat_id, thread_id))
            future.cancel()
            return
        ts = await future
        if ts is None:
            return
        wait = await self._try_delete((chat_id, thread_id), ts)
        if wait is not None:
            self._stale[ts] = (chat_id, thread_id)
            self._background(self._delete_later((chat_id, thread_id), ts, wait))

    def accepted(self) -> None:
        """A Web API call succeeded with the bot token: the deletions it refused are tried again."""
        if self._refused:
            refused, self._refused = self._refused, {}
            self._background(self._delete_all(refused))

    def reopened(self, chat_id: str) -> None:
        """The bot may write to channel ``chat_id`` again (added back, unarchived, a message to it there): the
        deletions Slack refused there meanwhile are tried again."""
        barred = {ts: where for ts, where in self._barred.items() if where[0] == chat_id}
        for ts in barred:
            del self._barred[ts]
        if barred:
            self._background(self._delete_all(barred, again=True))

    async def stop(self, seconds: float) -> None:
        """A last attempt, within ``seconds``, at deleting every placeholder still shown (waiting for
        posts in flight); nothing is left to retry with after it. What it had no time for (Slack slow to
        answer: its Web API client would wait 30 s a call) is told to `bind_indicators_left`, as a
        deletion Slack refused: the next start deletes it. Called once the adapter's background work is
        cancelled."""
        placeholders, self._placeholders = self._placeholders, {}
        posting: dict[Where, asyncio.Future[str | None]] = {}
        for where, future in placeholders.items():
            if where in self._queued:
                self._queued.discard(where)
                future.cancel()
            else:
                posting[where] = future
        try:
            async with asyncio.timeout(seconds):
                for where, future in list(posting.items()):
                    if (ts := await future) is not None:
                        self._stale[ts] = where
                    del posting[where]
                refused, self._refused = self._refused, {}
                await self._delete_all({**self._stale, **refused}, paced=False)  # last attempt, not waiting its turn
        except TimeoutError:
            # Cut off: a post (perhaps made), the deletions not done (`_delete_all` keeps them as refused).
            for where in {*posting, *self._stale.values(), *self._refused.values()}:
                self._left(*where)
        self._stale.clear()
        self._refused.clear()  # a later start finds them again (`clear_left_behind`)
        self._barred.clear()  # told to `_left` as they were refused: the next start looks there
        self._own_placeholders.clear()
        self._unsure.clear()  # told to `_left` as their posts failed: the next start looks there

    async def _delete_all(self, placeholders: dict[str, Where], *, paced: bool = True, again: bool = False) -> None:
        """Delete ``placeholders``; one Slack cannot take for now (a 429, an outage) is left to the next start, or
        with ``again`` tried again in the background first, as a turn's own (`_delete_later`): no event says when
        a channel the bot is back in takes it, as `accepted` says it for the token."""
        left = dict(placeholders)
        try:
            for ts, where in placeholders.items():
                if (wait := await self._try_delete(where, ts, paced=paced)) is not None:
                    if again:
                        self._stale[ts] = where  # `stop` makes a last attempt
                        self._background(self._delete_later(where, ts, wait))
                    else:
                        self._left(*where)  # not now (a 429, an outage): the next start tries again
                del left[ts]
        finally:
            self._refused.update(left)  # cancelled (by `stop`): its last attempt tries them

    async def _try_delete(self, where: Where, ts: str, *, paced: bool = True) -> float | None:
        """Delete one placeholder of conversation ``where``, in its turn across the workspace unless
        not ``paced`` (the stop's last attempt): None when done (or refused for the token: deleted
        later), else the seconds to wait before trying again."""
        chat_id = where[0]
        if paced:
            self._deleting += 1
            try:
                await self._turn(chat_id, op="delete")
            finally:
                self._deleting -= 1
        self._wrote(chat_id, op="delete")
        try:
            # Its refusals are no warning: gone already or not ours to delete is done (`DeliveryError` below).
            await self._api("chat.delete", chat_id, channel=chat_id, ts=ts, caller_logs=True)
            self._wrote(chat_id, op="delete")  # counted from its answer too, as the outbox counts its calls
        except RateLimited as exc:  # per workspace: every channel's deletions wait it out, not only this one
            self._wrote(chat_id, op="delete", refused_for=exc.retry_after)
            return min(exc.retry_after, self._max_retry_after)
        except NetworkError:
            return 2.0
        except Unauthorized:
            self._stale.pop(ts, None)
            self._refused[ts] = where
            self._left(*where)  # a restart before Slack takes the token again must still look there
            return None
        except DeliveryError as exc:
            if _channel_closed(exc):  # until the bot may write to the channel again
                self._stale.pop(ts, None)
                remember(self._barred, ts, where, KEPT_MOST)
                self._left(*where)
                return None
            # gone already, or not ours to delete: nothing more to do
        self._stale.pop(ts, None)
        self._own_placeholders.discard(ts)
        self._shown_no_more(where)
        return None

    async def _delete_later(self, where: Where, ts: str, wait: float) -> None:
        for _ in range(5):
            await asyncio.sleep(wait)
            retry = await self._try_delete(where, ts)
            if retry is None:
                return
            wait = retry
        self._left(*where)  # Slack would not take the deletion for now: the next start tries again


def _channel_closed(exc: DeliveryError) -> bool:
    """Whether Slack refused a deletion because the bot can no longer write to the channel at all: archived, or the
    bot not in it (``channel_not_found`` too, for a private channel it was removed from, which it no longer sees)."""
    cause = exc.__cause__
    return isinstance(cause, SlackApiError) and error_code(cause) in REFUSED


def _told_nothing(chat_id: str, thread_id: str | None) -> None:
    return None


async def _at_once(chat_id: str, op: str | None = None) -> None:
    return None
