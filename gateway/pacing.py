"""When the outbox may next call a platform for one chat, and waits that yield to urgent work.

Four limits combine: the adapter's spacing of calls to one chat (Telegram: 20 messages a
minute in groups), its spacing of edits to one message (Telegram: one a second), its spacing of
edits, file sends and deletions across all of a platform's chats (Slack counts ``chat.update``,
``chat.delete`` and its upload methods per workspace, its placeholders' deletions included; a
progress card waiting for that turn is coalesced meanwhile, so only its newest text goes), and a
platform's 429, which holds the chat for ``retry_after``: all of it when a reply was
refused, only its progress messages (notices, cards) when one of those was — a storm of
refused card edits never holds back the answer. A 429 on an op counted across the chats (a
Slack ``chat.update``) also holds that op in all of them, so no other chat draws a 429 of its
own to learn it. A wait for a progress message gives way the moment a reply is queued in the
same chat.

A slot counted across the chats goes to its waiters in the order they began to wait for it, each
wait ending at its own turn: woken all at once, whichever ran first took it, and a chat editing its
card without pause took every slot while the other chats' cards froze. A waiter ahead is counted
only while it waits in `Pacer.wait` to be ready by then (a chat held by a 429 of its own lets those
behind go meanwhile), and leaves at its call, at a wait preempted or cancelled, once it asks for
anything else, or once it yields after its turn came without calling: one that left without a word
never holds up the rest.

A chat here is the platform's: its threads (a Telegram forum's topics, a Slack channel's
threads) are sent by senders of their own but share its limits, as those platforms count them,
so busy topics never add up to more than the group may take. A sender counts a call from its
start too (`Pacer.called` before and after), so another thread's sender waits the pace from it, not
its answer: a call that hangs (until its timeout) holds up only its own thread.

Each limit is kept as the time it lifts, and only while it holds: a platform without
pacing (webhooks, the web chat) leaves nothing behind, and a busy gateway keeps one entry
per chat or message written to within the last interval, however many it has sent.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Collection
from typing import Any

from agent import Clock
from platforms.base import Adapter, KnowsUnchangeable
from platforms.pacing import Paced, Pacing

ChatKey = tuple[str, str, str | None]
PlatformChat = tuple[str, str]
"""(platform, chat id): what a platform's limits are counted by, whatever the thread."""
NO_PACING = Pacing()
_SAME = 1e-6
"""Seconds within which a waiter ahead wakes "by" a turn: a wait's end is computed as now plus its
length, in floating point."""
_PRUNE_AT = 1024
"""Lifted limits are dropped once this many are kept, and then only when the count has doubled
since the last drop: a send never walks every limit still holding."""


_PACED: dict[type, bool] = {}
"""Whether an adapter class is `Paced`: asking a runtime protocol costs ~12 µs, every delivery asks."""


def account_op(op: str, edit_of: str | None) -> str | None:
    """What of an outbox part's call (its ``op``; ``edit_of``: the message an edit changes) the
    platform may also limit across chats (`Pacing.account_edit_interval`, ``account_file_interval``,
    ``account_delete_interval``)."""
    return "edit" if edit_of is not None else op if op in ("file", "delete") else None


def refused_unasked(adapter: Adapter, chat_id: str, message_id: str) -> bool:
    """Whether the adapter refuses an edit or deletion of ``message_id`` (`EditUnsupported`) without calling
    the platform (`KnowsUnchangeable`). Such a change is sent anew at once: waiting the chat's pace for it,
    and counting it as a call, held what came next in the chat back a slot or two for a call never made."""
    return isinstance(adapter, KnowsUnchangeable) and adapter.unchangeable(chat_id, message_id)


def pacing_of(adapter: Adapter, chat_id: str) -> Pacing:
    kind = type(adapter)
    paced = _PACED.get(kind)
    if paced is None:
        paced = _PACED[kind] = isinstance(adapter, Paced)
    return adapter.pacing(chat_id) if paced else NO_PACING


def _account_interval(pacing: Pacing, op: str | None) -> float:
    return {"edit": pacing.account_edit_interval, "file": pacing.account_file_interval,
            "delete": pacing.account_delete_interval, "lookup": pacing.account_lookup_interval}.get(op or "", 0.0)


class Pacer:
    def __init__(self, clock: Clock, on_wait: Callable[[], None] | None = None) -> None:
        self._clock = clock
        self._on_wait = on_wait
        """Called each time a task begins to wait (`waiting_beyond` may have become true)."""
        self._call_free: dict[PlatformChat, float] = {}
        """When the next call to a chat may go."""
        self._edit_free: dict[tuple[PlatformChat, str], float] = {}
        """When the next edit of a message may go."""
        self._blocked: dict[tuple[PlatformChat, bool], float] = {}
        """When a 429 stops holding a chat (``True``: only its progress messages)."""
        self._account_free: dict[tuple[str, str], float] = {}
        """When the next edit, file send or deletion (``op``) may go on a platform, in any of its chats:
        its spacing, or a 429 on that op (`block`)."""
        self._account_step: dict[tuple[str, str], float] = {}
        """The spacing of each op a platform counts across its chats, once one has gone out."""
        self._queues: dict[tuple[str, str], dict[asyncio.Task[object], None]] = {}
        """The tasks waiting for each such op's slot, in the order they began to wait."""
        self._queued: dict[asyncio.Task[object], tuple[tuple[str, str], float]] = {}
        """The slot each task in `_queues` waits for, and when its chat's own limits let it go."""
        self._nudges: dict[asyncio.Task[object], asyncio.Event] = {}
        """Set to wake a task in `wait` behind others in a queue when one ahead gives up: its turn came sooner."""
        self._prune_at = _PRUNE_AT
        self._waking: dict[asyncio.Task[object] | None, float] = {}
        """The tasks in `wait` now, and when each wakes (unless preempted first)."""

    def delay(self, chat: ChatKey, *, edit_of: str | None = None, progress: bool = False,
              op: str | None = None) -> float:
        """Seconds until a call to ``chat`` (an edit of message ``edit_of``; a progress message; an
        ``op`` the platform also limits across chats: ``"edit"``, ``"file"``, ``"delete"``, ``"lookup"``)
        may go; 0 when now."""
        chat = chat[:2]
        due = max(self._blocked.get((chat, False), 0.0), self._call_free.get(chat, 0.0))
        if progress:
            due = max(due, self._blocked.get((chat, True), 0.0))
        if edit_of is not None:
            due = max(due, self._edit_free.get((chat, edit_of), 0.0))
        if op is not None and self._account_free:
            due = self._turn((chat[0], op), due)
        elif self._queued:
            self._leave(_running_task())
        return max(0.0, due - self._clock.monotonic()) if due else 0.0

    def _turn(self, key: tuple[str, str], due: float) -> float:
        """``due``, or when the running task's turn at ``key``'s slot comes if later: after each waiter
        ahead of it that is ready by then, one spacing apart. Queues the task while it has to wait."""
        now, turn = self._clock.monotonic(), self._account_free.get(key, 0.0)
        task = _running_task()
        if self._queued and self._queued.get(task, (key,))[0] != key:  # type: ignore[arg-type]
            self._leave(task)
        step = self._account_step.get(key, 0.0)
        if task is None or step <= 0 or (turn <= now and key not in self._queues):
            return max(due, turn)
        turn = max(turn, now)
        for other in list(self._queues.get(key, ())):
            if other is task:
                break
            if (wakes := self._waking.get(other)) is None:  # moved on: answered, idle, gone
                self._leave(other)
            elif wakes <= turn + _SAME:
                turn += step
        if max(due, turn) > now and task not in self._queued:
            self._queues.setdefault(key, {})[task] = None
        if task in self._queues.get(key, ()):
            self._queued[task] = (key, due)
        return max(due, turn)

    def _leave(self, task: asyncio.Task[object] | None, *, served: bool = False) -> None:
        """``task`` waits for no slot now: it took its turn (``served``), or gave it up, waking those
        behind it to take theirs sooner."""
        if (entry := self._queued.pop(task, None)) is None:  # type: ignore[arg-type]
            return
        key = entry[0]
        queue = self._queues[key]
        if not served:
            behind = list(queue)[list(queue).index(task) + 1:]  # type: ignore[arg-type]
            for other in behind:
                if (nudge := self._nudges.get(other)) is not None:
                    nudge.set()
        del queue[task]  # type: ignore[arg-type]
        if not queue:
            del self._queues[key]

    def called(self, chat: ChatKey, pacing: Pacing, *, edit_of: str | None = None,
               op: str | None = None) -> Callable[[], None]:
        """A call to ``chat`` (of message ``edit_of``, whose next edit must wait; an ``op`` counted
        across the platform's chats) went out now. Returns what puts the chat's and the message's pace back
        as it was, unless a call since counted anew: for a write counted as it began that made no call after
        all (`platforms.pacing.SteppedAside`: a group's answer waited 3 s from an edit that never went)."""
        account = _account_interval(pacing, op)
        if self._queued:
            self._leave(_running_task(), served=True)
        if not (pacing.call_interval > 0 or (edit_of is not None and pacing.edit_interval > 0) or account > 0):
            return _NOTHING
        chat, now = chat[:2], self._clock.monotonic()
        paces: list[tuple[dict[Any, float], Any, float | None, float]] = []
        if pacing.call_interval > 0:
            paces.append((self._call_free, chat, self._call_free.get(chat), now + pacing.call_interval))
        if edit_of is not None and pacing.edit_interval > 0:
            key = (chat, edit_of)
            paces.append((self._edit_free, key, self._edit_free.get(key), now + pacing.edit_interval))
        for free, key, _, until in paces:
            free[key] = until
        if account > 0:
            self._account_step[(chat[0], op)] = account  # type: ignore[index]
            self._hold_account(chat[0], op, now + account)  # type: ignore[arg-type]
        self._prune(now)
        return functools.partial(_uncount, paces)

    def account_delay(self, platform: str, op: str) -> float:
        """Seconds until an ``op`` counted across the platform's chats may go, whatever the chat's own
        pace: an adapter's own deletion (`platforms.pacing.WaitsAside`)."""
        due = self._account_free.get((platform, op), 0.0)
        return max(0.0, due - self._clock.monotonic()) if due else 0.0

    def account_called(self, platform: str, pacing: Pacing, op: str, *, refused_for: float = 0.0) -> None:
        """An ``op`` counted across the platform's chats went out now, outside the outbox;
        ``refused_for``: the platform refused it (a 429) for that many seconds, which it waits in
        every chat, as after `block`."""
        if self._queued:
            self._leave(_running_task(), served=True)
        if (interval := _account_interval(pacing, op)) > 0:
            self._account_step[(platform, op)] = interval
            self._hold_account(platform, op, self._clock.monotonic() + max(interval, refused_for))

    def block(self, chat: ChatKey, seconds: float, *, progress: bool = False, pacing: Pacing = NO_PACING,
              op: str | None = None) -> None:
        """The platform asked the chat to wait (a 429): every call to it waits too, or with
        ``progress`` (a progress message was refused) only its progress messages. When the refused
        call was an ``op`` that ``pacing`` counts across the platform's chats (Slack's ``chat.update``,
        per workspace), that op waits in every chat too: the platform would refuse it there as well,
        and each chat asking to learn so draws a 429 of its own."""
        key, now = (chat[:2], progress), self._clock.monotonic()
        self._blocked[key] = max(self._blocked.get(key, 0.0), now + seconds)
        if op is not None and _account_interval(pacing, op) > 0:
            self._hold_account(chat[0], op, now + seconds)
        self._prune(now)

    def _hold_account(self, platform: str, op: str, until: float) -> None:
        # Never shortened: a call answered after a 429 (another chat's, in flight alongside it)
        # must not lift the platform's hold by counting its own spacing from now.
        key = (platform, op)
        self._account_free[key] = max(self._account_free.get(key, 0.0), until)

    @property
    def kept(self) -> int:
        """Limits kept in memory (some may have lifted since the last drop)."""
        return len(self._call_free) + len(self._edit_free) + len(self._blocked)

    def _prune(self, now: float) -> None:
        if self.kept <= self._prune_at:
            return
        self._call_free = {k: t for k, t in self._call_free.items() if t > now}
        self._edit_free = {k: t for k, t in self._edit_free.items() if t > now}
        self._blocked = {k: t for k, t in self._blocked.items() if t > now}
        self._prune_at = max(_PRUNE_AT, 2 * self.kept)

    def waiting_beyond(self, tasks: Collection[asyncio.Task[object]], seconds: float) -> bool:
        """Whether each of ``tasks`` (at least one) is in `wait` and wakes more than ``seconds``
        from now: none of them calls a platform before then."""
        now = self._clock.monotonic()
        return bool(tasks) and all(self._waking.get(task, now) - now > seconds for task in tasks)

    async def wait(self, seconds: float, preempt: asyncio.Event | None = None,
                   wake: asyncio.Event | None = None) -> bool:
        """Sleep ``seconds`` on the clock, less if ``wake`` is set first; False (at once) if
        ``preempt`` is set first. A task that gives up (preempted, cancelled) leaves the slot it waited for."""
        task = asyncio.current_task()
        if preempt is not None and preempt.is_set():
            self._leave(task)
            return False
        if seconds <= 0:
            return True
        end = self._waking[task] = self._clock.monotonic() + seconds
        if (entry := self._queued.get(task)) is not None and next(iter(self._queues[entry[0]])) is not task:
            self._nudges[task] = asyncio.Event()  # one alone or first in line is never nudged: no cost
        if self._on_wait is not None:
            self._on_wait()
        woke = False
        try:
            while True:
                woke = await self._sleep(end - self._clock.monotonic(), preempt, wake, self._nudges.get(task))
                if not woke or not self._nudged(task, wake):
                    return woke
                # Its turn came sooner, but not at once: a caller that waits once (a deletion) then calls.
                end = self._waking[task] = min(end, self._turn(*self._queued[task]))
                if end <= self._clock.monotonic():
                    return True
        finally:
            del self._waking[task]
            self._nudges.pop(task, None)
            if not woke:
                self._leave(task)
            elif task in self._queued:
                asyncio.get_running_loop().call_soon(self._unused, task)

    def _unused(self, task: asyncio.Task[object] | None) -> None:
        """``task`` woke for its turn at a slot and has yielded since: it called, waits again, or went on
        without a call (its card withdrawn meanwhile), which gives the slot to those behind it at once.
        Kept for it, the next in line waited a whole spacing after a slot nobody used."""
        if task in self._queued and task not in self._waking:
            self._leave(task)

    def _nudged(self, task: asyncio.Task[object] | None, wake: asyncio.Event | None) -> bool:
        """Whether ``task`` woke because a waiter ahead of it in a queue gave up (not by ``wake``)."""
        nudge = self._nudges.get(task)
        if nudge is None or not nudge.is_set() or (wake is not None and wake.is_set()) or task not in self._queued:
            return False
        nudge.clear()
        return True

    async def _sleep(self, seconds: float, preempt: asyncio.Event | None, *wakes: asyncio.Event | None) -> bool:
        events = [event for event in (preempt, *wakes) if event is not None]
        if not events:
            await self._clock.sleep(seconds)
            return True
        waits = [asyncio.ensure_future(self._clock.sleep(seconds))]
        waits += [asyncio.ensure_future(event.wait()) for event in events]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()
        return preempt is None or not preempt.is_set()


def _running_task() -> asyncio.Task[object] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no event loop running (a test asking outside one): nobody queues
        return None


def _nothing() -> None:
    pass


_NOTHING = _nothing
"""`Pacer.called`'s undoing where nothing was counted."""


def _uncount(paces: list[tuple[dict[Any, float], Any, float | None, float]]) -> None:
    """Put each pace `Pacer.called` set back as it was, unless another call set it since (or it was pruned)."""
    for free, key, was, until in paces:
        if free.get(key) == until:
            if was is None:
                del free[key]
            else:
                free[key] = was
