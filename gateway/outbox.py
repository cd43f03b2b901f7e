"""The outbox: every outbound message journaled, then sent once, in order, per chat.

Guarantees:

- **Journal first.** `Outbox.enqueue` splits the text to the adapter's limit and
  writes each part to the store, pending, before anything is sent (`enqueue_long`
  splits in a worker thread first, for a model's replies, a plugin command's answers and background
  results sent as they are, unless the text fits and the adapter only counts characters). Keys are the
  caller's key plus the part number; a key already journaled is not journaled
  again, so replaying a turn after a restart never sends twice. The user's message a
  part quotes (``reply_to``, the first part's only) is journaled with it: a part sent
  after a restart quotes it too. A part that took its turn's quote and failed (a file the
  platform refused) passes it on to the turn's next message.
- **Bounded.** A message that splits into more parts than its platform's bound (``max_parts``) is journaled
  as its first parts up to the bound, then the whole of it as a file, or a note saying what was left out
  (`gateway.long_messages`), all in one statement as a message's parts are: a runaway answer cannot flood the chat.
- **Once.** A part is marked sent with the platform's message id right after the
  adapter returns. Pending parts are sent by the next `Outbox.start` after a
  restart. The one gap: a process that dies (or an outbox closed) while an adapter
  call is in flight sends that part again; adapters pass the key on as a nonce
  where the platform dedupes, and where it can be asked (`platforms.base.FindsSent`)
  the part is looked up first. A new message is marked tried in the commit before its
  first attempt (journaled so when its chat has nothing queued: it goes at once), so after a
  restart only those are looked up: one never tried goes straight out (a crash between the
  mark and the call costs a lookup that finds nothing).
- **Order.** One sender per chat (platform, chat, thread) sends in enqueue order, with
  one exception: progress messages (``notice`` parts: notices and progress cards) give
  way to everything else, so a reply never waits behind a card edit; where an adapter keeps its account's
  rate across chats, they give way to the other chats' writes there too (`platforms.pacing.GIVES_WAY`). Calls are paced
  as the adapter asks (`platforms.pacing.Paced`: per chat, its threads' senders together, and
  per edited message). Chats never wait for each other: a 429 holds only its own chat (with
  its threads), a backoff or a call that hangs only its own sender.
- **Coalescing.** A new edit or deletion of a progress message supersedes the ones still
  pending for it (they are dropped, also while the chat waits out a 429), and a
  deletion of one never sent drops both: only the newest state of a card goes out.
  A progress message withdrawn when its work is over (`Outbox.withdraw`) before it
  went out is never sent, nor are its edits and deletions: it would follow the answer; nor are
  those of one whose send failed for good, which nothing put in the chat since (but one given up on
  while its answers were lost may be there: where the platform can be asked, its change looks it up
  first, `Sender.look_up_failed`). Parts past the first of a progress message, which an older build
  sent as messages of their own, are not sent after an upgrade (`gateway.resplit.past_the_first`).
- **Failure.** 429: wait ``retry_after`` (capped by ``max_retry_after``) and send the
  same part again. Network errors, 5xx and unexpected exceptions: back off
  (0.5 s doubling to 60 s, jittered); so does a look-up (`platforms.base.FindsSent`) that
  meets one before a part is sent again. A part still failing ``give_up_after`` seconds
  after it was journaled (time queued behind other parts counts; time the machine was
  suspended or the gateway stopped does not: `gateway.give_up`) is marked failed,
  and the chat moves on; but an edit or deletion of a progress message is tried on, at
  most a backoff apart, until the platform takes or refuses it (the card would read ⏳ for good,
  its turn over): it holds no reply back, and a newer change of the card replaces it. Forbidden,
  NotFound and BadRequest are final at once. Unauthorized (the platform refuses the bot's own
  credentials, in every chat) is not: the platform's parts are held, in order, until it takes
  them again; time held does not count toward ``give_up_after`` (`gateway.credential_hold`).
  Closed (the platform takes nothing more from this process: the terminal chat's output
  went away) is neither: the part stays pending for the next start, and so does every
  later part of that platform, untried, so a stop's `flush` has nothing of it to wait for.
  MessageTooLong re-splits the part at half its size into pieces ``{key}/a``,
  ``{key}/b``... sent in its place (`gateway.resplit`: a progress message's first piece only, and an
  edit's first piece edits); dropping the part (a card withdrawn) drops its pieces not sent
  yet. A part of a message of several that fails for good (refused, given up on; re-split, with no
  piece sent) is followed, in its place, by a note saying so (``{message}:missing``, one per message;
  `gateway.part_notes.missing_text`). Failures are logged (platform, chat, key, error), never the text.
- **Store failures.** If the store raises while a part is read, committed before its send
  or its outcome recorded, the part stays at the head of its chat: the error is logged and
  the chat backs off (as above, never giving up: the platform did not refuse it) and tries
  again, so nothing queued behind it overtakes it. An outcome already known (the platform took the
  part, or refused it for good) is then only recorded, never sent again; a failure only with the note
  owed in its place (`gateway.sender.Sender._fail`), whose send goes with it.
- **Files.** A file send (`enqueue_file`, op ``file``) is one part like any other: its text is
  the caption, and the bytes are the copy `gateway.outbox_files` keeps under its key, made
  before it was journaled. It is retried like text; a platform that refuses its size or its
  caption's length fails it at once. One that fails for good is followed by a note naming it
  (``{turn}:file:{n}:missing``, `gateway.part_notes.file_note`), in its place also when the note goes
  after a restart: ahead of what was queued behind the file. Its copy is removed once it is
  sent or dropped; a failed one keeps it for the operator's retry until it is dismissed (or
  forgotten with its row, then removed by the retention sweep, `gateway.retention`). One whose
  answer was lost is looked up before it is sent again, as text is, where the adapter can find it (Discord,
  among the posts this process heard; a Slack upload asks for the file it made, `platforms.slack_uploads`);
  a process that dies during an upload sends that file again after the restart (Discord drops the repeat by
  its nonce, within a few minutes of the first).
- **Late.** A message whose first part goes out ``late_after`` seconds or more after it
  was journaled is preceded by a note of its age (`gateway.late_notes`). A part to look up
  (above) is looked up before its note: one found went out when it was first tried, and gets none.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import random
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from agent import SYSTEM_CLOCK, Clock
from gateway import long_messages, resplit
from gateway.chat_queue import ChatQueue, SplitTurn
from gateway.errors import GatewayError
from gateway.events import GatewayEvents
from gateway.outbox_files import OutboxFiles
from gateway.outbox_part import PROGRESS_KINDS, ChatKey, answers_privately
from gateway.part_notes import file_noted
from gateway.sender import BACKOFF_FIRST, BACKOFF_MAX, Sender
from gateway.splitting import safe_measure
from gateway.store import NewMessage, OutboxRow, OutboxRows
from gateway.withdrawal import CHANGES, drop_pending, withdrawn
from platforms.base import Adapter, CountsCharacters

log = logging.getLogger("gateway.outbox")

DEFAULT_GIVE_UP_AFTER = 3600.0

T = TypeVar("T")


class OutboxClosed(GatewayError):
    """`Outbox.wait_sent` was waiting when the outbox closed; the message is still pending."""


class Outbox:
    """The durable, per-chat-ordered sender. Use from one event loop; see the module docstring.

    ``give_up_after`` maps platforms to the seconds a part may keep failing with retryable
    errors (default `DEFAULT_GIVE_UP_AFTER`; the webhook's ``retry_for_seconds``). Every wait
    (pacing, 429, backoff) sleeps on ``clock``; ``rng`` draws the backoff jitter. ``late_after``:
    the age at which a message is sent with a note saying so (0: never; `gateway.late_notes`).
    ``files``: where the copies of files to send are kept (none: a file send fails). ``unspent(row)``:
    ``row`` took its turn's quote and failed, and the turn has journaled no message since to take
    it (`gateway.quote_passing.pass_quote`). ``max_parts(platform)``: the most parts a message is sent in there (0:
    no bound; default `gateway.long_messages.DEFAULT_MAX_PARTS`).
    """

    def __init__(self, store: OutboxRows, adapters: Mapping[str, Adapter], *, max_retry_after: float = 60.0,
                 clock: Clock = SYSTEM_CLOCK, give_up_after: Mapping[str, float] | None = None,
                 rng: random.Random | None = None, events: GatewayEvents | None = None,
                 late_after: float = 0.0, files: OutboxFiles | None = None,
                 unspent: Callable[[OutboxRow], None] | None = None,
                 max_parts: Callable[[str], int] | None = None) -> None:
        self._store = store
        self._max_parts = max_parts or (lambda _: long_messages.DEFAULT_MAX_PARTS)
        self._files = files
        self._adapters = adapters
        self._rng = rng or random.Random()
        self._stirred = asyncio.Event()
        """Set when a chat's sender begins to wait or ends: what `flush` may give up on changed."""
        self._sender = Sender(store, adapters, clock=clock, max_retry_after=max_retry_after,
                              give_up_after=dict(give_up_after or {}), default_give_up=DEFAULT_GIVE_UP_AFTER,
                              rng=self._rng, settle=self._resolve, events=events, late_after=late_after,
                              files=files, on_wait=self._stirred.set, unspent=unspent)
        self._queues: dict[ChatKey, ChatQueue] = {}
        self._current: dict[ChatKey, int] = {}
        self._tasks: dict[ChatKey, asyncio.Task[None]] = {}
        self._waiters: dict[str, list[asyncio.Future[str | None]]] = {}
        self._splitting: dict[ChatKey, SplitTurn] = {}
        """Chats with an `enqueue_long` under way: their calls journal one after another."""
        self._counts_characters: dict[str, bool] = {}
        """Per platform, whether its adapter counts characters (asked once: an isinstance check is slow)."""
        self._queued = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._started = self._closed = False
        self._old_extras: bool | None = None
        """Whether the store holds messages past a progress message's first, sent by an older build
        (`extra_messages`); None until asked. This build sends none, so it stays False once asked, unless the
        operator retries an older build's failed one (`retry`)."""

    # --- lifetime -----------------------------------------------------------------------

    async def start(self) -> None:
        """Begin sending: every part still pending in the store (journaled before a restart,
        or enqueued before this call) is queued in journal order, but a file's note in its file's place
        (`gateway.part_notes.file_noted`). Idempotent."""
        if self._started or self._closed:
            return
        self._started = True
        if self._files is not None:  # copies of sends settled meanwhile, or never journaled (a crash between)
            self._files.sweep(self._store.kept_files())
        pending = self._store.pending_messages()
        if stale := [r.id for r in pending if r.kind in PROGRESS_KINDS and resplit.past_the_first(r.key)]:
            # An older build's messages past a card's first (`gateway.resplit.past_the_first`): sent now, they
            # would show stale lines of a card that is one message here, which nothing edits again.
            dropped = set(self._store.drop(stale))
            pending = [r for r in pending if r.id not in dropped]
            log.info("outbox: %d pending part(s) of progress messages an older build split are not sent",
                     len(dropped))
        self._has_old_extras()  # asked now, so that no card's end pays for the scan
        places = {row.id: place for row in pending if (place := file_noted(self._store, row)) is not None}
        pending.sort(key=lambda row: (places.get(row.id, row.id), row.id not in places))
        for row in pending:
            self._push(row.chat, row.id, progress=row.kind in PROGRESS_KINDS)
        if pending:
            log.info("outbox: resuming %d pending message(s) in %d chat(s)", len(pending), len(self._queues))

    @property
    def idle(self) -> bool:
        """Nothing is queued to send (parts journaled before `start` are not queued yet)."""
        return self._queued == 0

    async def flush(self, timeout: float | None = None, *, give_up_when_held: bool = False) -> bool:
        """Wait until every queued part is sent, failed or dropped (or left pending for want of
        its platform: no adapter, or `Closed`), or ``timeout`` seconds pass; True if nothing is
        left queued. Parts left pending are sent by the next start. With
        ``give_up_when_held``, False at once when every chat still sending is held past the
        timeout (a 429's ``retry_after``, a backoff): nothing would be sent meanwhile."""
        if self._queued == 0:
            return True
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        idle = asyncio.ensure_future(self._idle.wait())
        try:
            while not idle.done():
                self._stirred.clear()
                left = None if deadline is None else deadline - loop.time()
                if left is not None and (left <= 0 or give_up_when_held and self._sender.waiting_beyond(
                        self._tasks.values(), left)):
                    return False
                waiting = asyncio.ensure_future(self._stirred.wait())
                try:
                    await asyncio.wait((idle, waiting), timeout=left, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    waiting.cancel()
        finally:
            idle.cancel()
        return True

    async def close(self) -> None:
        """Cancel the senders at once. Unsent parts stay pending in the store for the next
        `start`; `wait_sent` callers get `OutboxClosed`. Later enqueues only journal. Idempotent."""
        self._closed = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for futures in self._waiters.values():
            for future in futures:
                if not future.done():
                    future.set_exception(OutboxClosed("the outbox closed before the message was settled"))
        self._waiters.clear()

    # --- journaling -----------------------------------------------------------------------

    def enqueue(self, platform: str, chat_id: str, thread_id: str | None, text: str, *, kind: str, key: str,
                turn_id: str | None = None, silent: bool = False, reply_token: str | None = None,
                reply_to: str | None = None) -> list[str]:
        """Split ``text``, journal the parts as ``{key}:0``, ``{key}:1``... and queue them; returns
        the part keys. Idempotent: if ``{key}:0`` was ever journaled (and not yet pruned) nothing
        is added and the existing keys are returned. Empty text journals nothing. Parts of a
        turn get the turn's next ``sequence`` numbers. ``reply_to``: the user's message the first
        part quotes (journaled with it). Parts answering through ``reply_token`` that the adapter keeps to the
        command's user are journaled so (`gateway.outbox_part.answers_privately`). KeyError for a platform without
        adapter."""
        return self._enqueue_parts(platform, chat_id, thread_id, self._split(platform, text), kind=kind, key=key,
                                   turn_id=turn_id, silent=silent, reply_token=reply_token, reply_to=reply_to,
                                   whole=text)

    async def enqueue_long(self, platform: str, chat_id: str, thread_id: str | None, text: str, *, kind: str,
                           key: str, turn_id: str | None = None, silent: bool = False,
                           reply_token: str | None = None, first: Callable[[], object] | None = None,
                           reply_to: str | Callable[[], str | None] | None = None,
                           journal_if_cancelled: bool = False) -> list[str]:
        """`enqueue`, the text split in a worker thread first: for what a model writes, which can
        be long and heavy with formatting, so rendering it to find the cuts takes up to a second,
        during which no other chat would be served (a text that fits an adapter counting characters,
        `CountsCharacters`, is split at once: there is nothing to render). Calls in one chat are
        journaled in the order they were made (each with all its parts, in order); an `enqueue`
        made meanwhile may come first. ``first`` is called once the parts are split, right before
        they are journaled (a turn's progress message finished with its reply, not a split's time
        before it); should it raise, nothing is journaled and the error is the call's (results whose
        delegation a /stop settled meanwhile: `gateway.ledger_failures`). ``reply_to`` may be a function
        giving it, called then too (a turn's quote, which a refused file may give back meanwhile:
        `gateway.quote_passing.pass_quote`). Cancelled while splitting:
        nothing is journaled, neither function called; with ``journal_if_cancelled`` (a turn's reply at a
        shutdown), the split under way is finished instead, not begun again, the text journaled, and then the
        cancellation raised (a second cancellation gives it up: nothing is journaled). A text past ``max_parts``
        parts has its ``answer.md`` kept in a worker thread too, and so cancelled as the split is: a copy left
        behind, never journaled, goes at the next sweep (`gateway.outbox_files.OutboxFiles.sweep`). ``reply_token``:
        as `enqueue`'s (a plugin command's answer)."""
        chat = (platform, chat_id, thread_id)

        def journal(parts: list[str], tail: NewMessage | None = None) -> list[str]:
            if first is not None:
                first()
            return self._enqueue_parts(platform, chat_id, thread_id, parts, kind=kind, key=key, turn_id=turn_id,
                                       silent=silent, reply_token=reply_token, reply_to=_called(reply_to),
                                       whole=text, tail=tail)

        def tail_to_make(parts: list[str]) -> long_messages.Tail | None:
            return self._tail_to_make(platform, chat_id, thread_id, parts, kind=kind, key=key, turn_id=turn_id,
                                      silent=silent, reply_token=reply_token, whole=text)

        if chat not in self._splitting and self._fits_as_counted(platform, text):
            # No rendering to wait for, so not worth a thread; and with no call of the chat's under way
            # nothing can come between: journaled at once, without a turn in the chat's line.
            return journal(self._split(platform, text))
        turn = self._splitting.setdefault(chat, SplitTurn())
        turn.users += 1
        try:
            return await self._split_in_line(turn, platform, text, journal, tail_to_make,
                                             keep=journal_if_cancelled)
        finally:
            turn.users -= 1
            if not turn.users:
                del self._splitting[chat]

    async def _split_in_line(self, turn: SplitTurn, platform: str, text: str,
                             journal: Callable[[list[str], NewMessage | None], list[str]],
                             tail_to_make: Callable[[list[str]], long_messages.Tail | None], *,
                             keep: bool) -> list[str]:
        """Split ``text`` and ``journal`` its parts once the chat's calls before are journaled, with the tail
        ``tail_to_make`` says they need, made in a worker thread too (its file's copy flushed before the row naming
        it commits). With ``keep``, a first cancellation waits for the chat's turn and the work under way, journals,
        and is raised then. The parts are journaled in the caller's task, as its next writes are: a turn's reply
        shares its end's commit (`gateway.turn_runner`), and a crash between the two would send the reply and run
        its message again."""
        cancelled = False
        while True:
            try:
                await turn.lock.acquire()
                break
            except asyncio.CancelledError:
                if not keep or cancelled:
                    raise
                cancelled = True
        try:
            if self._fits_as_counted(platform, text):  # behind a split under way in the chat
                parts = self._split(platform, text)
            else:
                parts, cancelled = await _in_thread(functools.partial(self._split, platform, text), keep=keep,
                                                    cancelled=cancelled)
            made = None
            if (tail := tail_to_make(parts)) is not None:
                made, cancelled = await _in_thread(tail.make, keep=keep, cancelled=cancelled)
            try:
                journaled = journal(parts, made)
            except Exception:
                if cancelled:  # the store refused it: nothing is journaled, and the cancellation stands all the same
                    raise asyncio.CancelledError from None
                raise
        finally:
            turn.lock.release()
        if cancelled:
            raise asyncio.CancelledError
        return journaled

    def _fits_as_counted(self, platform: str, text: str) -> bool:
        """Whether ``text`` is known to fit one part without rendering it: its adapter counts
        characters (`CountsCharacters`) and it has no more than the limit."""
        adapter = self._adapters[platform]
        counts = self._counts_characters.get(platform)
        if counts is None:
            counts = self._counts_characters[platform] = isinstance(adapter, CountsCharacters) and \
                adapter.counts_characters
        return counts and len(text) <= adapter.text_limit

    def _split(self, platform: str, text: str, *, bounded: bool = True) -> list[str]:
        """``text``'s parts; ``bounded``, those of only a start of a text far past ``max_parts`` parts (all but the
        first ``max_parts`` are left out: `gateway.long_messages.split_bounded`)."""
        adapter = self._adapters[platform]
        most = self._max_parts(platform) if bounded else 0
        return long_messages.split_bounded(text, adapter.text_limit, safe_measure(adapter), most)

    def _enqueue_parts(self, platform: str, chat_id: str, thread_id: str | None, parts: list[str], *, kind: str,
                       key: str, turn_id: str | None, silent: bool, reply_token: str | None,
                       reply_to: str | None, whole: str, tail: NewMessage | None = None) -> list[str]:
        """Journal ``parts``, those of the text ``whole``, as `enqueue` says, bounded (`gateway.long_messages`):
        past the bound, with ``tail`` after the first parts, else the tail made here (`_tail_to_make`)."""
        now = self._sends_now((platform, chat_id, thread_id))
        rows = self._rows(platform, chat_id, thread_id, parts, kind=kind, key=key, turn_id=turn_id, silent=silent,
                          reply_token=reply_token, reply_to=reply_to, now=now)
        if 0 < (most := self._max_parts(platform)) < len(rows):
            if self._store.has_message(rows[0].key):  # journaled before: its file's copy is not made again
                return self._existing(key)
            if tail is None:  # `enqueue` (an owed end, rare): its copy is kept on the loop, blocking it meanwhile
                tail = long_messages.tail(rows[0], key, whole, parts[:most], self._adapters[platform], self._files)
            # Private as the first part is now: the adapter may have learnt since the tail was made.
            rows = [*rows[:most], dataclasses.replace(tail, private=rows[0].private)]
        # Journaling tells whether the message was journaled before, in the same statement.
        ids = self._store.add_new_messages(rows) if rows else None
        if ids is None:
            return self._existing(key)
        self._queue(rows, ids)
        return [r.key for r in rows]

    def _rows(self, platform: str, chat_id: str, thread_id: str | None, parts: list[str], *, kind: str, key: str,
              turn_id: str | None, silent: bool, reply_token: str | None, reply_to: str | None,
              now: bool) -> list[NewMessage]:
        alone = answers_privately(self._adapters[platform], reply_token)
        return [NewMessage(f"{key}:{i}", platform, chat_id, thread_id, part, kind=kind, silent=silent,
                           reply_token=reply_token, turn_id=turn_id, sequence=None if turn_id else i,
                           reply_to=reply_to if i == 0 else None,  # the rest follow it: quoted once is enough
                           tried=now and i == 0, private=alone)
                for i, part in enumerate(parts)]  # fmt: skip

    def _tail_to_make(self, platform: str, chat_id: str, thread_id: str | None, parts: list[str], *, kind: str,
                      key: str, turn_id: str | None, silent: bool, reply_token: str | None,
                      whole: str) -> long_messages.Tail | None:
        """The tail `_enqueue_parts` would make for ``parts`` of ``enqueue_long``'s text ``whole``, to make
        beforehand off the loop; None where there is none to make: within the bound, or journaled before (its
        file's copy is not made again)."""
        most = self._max_parts(platform)
        if not 0 < most < len(parts) or self._store.has_message(f"{key}:0"):
            return None
        # The quote and tried mark are the first part's alone: the tail takes neither.
        first = self._rows(platform, chat_id, thread_id, parts[:1], kind=kind, key=key, turn_id=turn_id,
                           silent=silent, reply_token=reply_token, reply_to=None, now=False)[0]
        return long_messages.plan_tail(first, key, whole, parts[:most], self._adapters[platform], self._files)

    def enqueue_file(self, platform: str, chat_id: str, thread_id: str | None, caption: str, *,
                     key: str, turn_id: str | None = None, reply_to: str | None = None) -> bool:
        """Journal and queue the upload of the copy kept under ``key`` (`OutboxFiles.keep`, made
        first), with ``caption`` (may be empty), as one part of kind ``interim``, the next of
        ``turn_id``'s messages (a webhook caller reads them by turn), quoting ``reply_to`` as
        `enqueue`'s first part does. False, adding nothing, when ``key`` was journaled before."""
        rows = [NewMessage(key, platform, chat_id, thread_id, caption, kind="interim", op="file", turn_id=turn_id,
                           sequence=None if turn_id else 0, reply_to=reply_to,
                           tried=self._sends_now((platform, chat_id, thread_id)))]
        ids = self._store.add_new_messages(rows)
        if ids is None:
            return False
        self._queue(rows, ids)
        return True

    def enqueue_edit(self, platform: str, chat_id: str, thread_id: str | None, target_key: str, text: str, *,
                     key: str, kind: str | None = None) -> list[str]:
        """Journal an edit of the message sent under ``target_key`` (a part key, e.g. ``notice:0``),
        queued in the chat's order like any send; returns the keys, as `enqueue` does.

        The platform message id is looked up when the edit's turn comes. If the target failed,
        was dropped or never journaled, or the platform refuses the edit (EditUnsupported,
        NotFound, BadRequest, MessageTooLong), ``text`` is sent as a new message instead and
        ``target_key`` then points at it, so later edits edit the new message; but an edit of a
        progress message dropped before it went out (`withdraw`) is dropped too. Text longer
        than one part edits with the first part and sends the rest as new messages."""
        existing = self._existing(key)
        if existing:
            return existing
        target = self._store.message(target_key)
        self._supersede((platform, chat_id, thread_id), target)
        parts = self._split(platform, text, bounded=False)
        kind = kind or (target.kind if target is not None else "notice")
        turn_id = target.turn_id if target is not None else None
        silent = target.silent if target is not None else True
        rows = [NewMessage(f"{key}:{i}", platform, chat_id, thread_id, part, kind=kind, silent=silent,
                           op="edit" if i == 0 else "send", target_key=target_key if i == 0 else None,
                           turn_id=turn_id, sequence=None if turn_id else i)
                for i, part in enumerate(parts)]  # fmt: skip
        self._journal(rows)
        return [r.key for r in rows]

    def enqueue_delete(self, platform: str, chat_id: str, thread_id: str | None, target_key: str, fallback: str, *,
                       key: str) -> list[str]:
        """Journal a deletion of the message sent under ``target_key``, in the chat's order. Where the
        platform cannot delete it, it is edited to ``fallback`` instead (and sent anew where even
        that fails, as for `enqueue_edit`). A progress message not sent yet is withdrawn instead
        (`withdraw`): nothing is journaled when it never reached the chat for sure. Idempotent by ``key``."""
        existing = self._existing(key)
        if existing:
            return existing
        target = self._store.message(target_key)
        if target is not None and target.kind in PROGRESS_KINDS and self._withdrawn(target):
            return []  # it never went out: nothing to delete
        self._supersede((platform, chat_id, thread_id), target)
        rows = [NewMessage(f"{key}:0", platform, chat_id, thread_id, fallback, kind="notice", silent=True,
                           op="delete", target_key=target_key, turn_id=target.turn_id if target else None,
                           sequence=None if target and target.turn_id else 0)]
        self._journal(rows)
        return [rows[0].key]

    def _supersede(self, chat: ChatKey, target: OutboxRow | None) -> None:
        """Before a new edit or deletion of a progress message: drop the changes of it still pending."""
        if target is not None and target.kind in PROGRESS_KINDS:
            self.drop(*chat, lambda r: r.target_key == target.key and r.op in CHANGES)

    def withdraw(self, platform: str, chat_id: str, thread_id: str | None, target_key: str) -> bool:
        """The work a progress message reports on is over: if it has not reached the chat yet it
        never will (dropped with its pending edits and deletions), since it would only appear
        after the answer. True when it was withdrawn for sure: there is nothing to finalise.
        False when it went out, or may still: it was being sent (a send in the adapter's hands
        still counts as sent; one refused is not tried again), and an edit or deletion of it
        queued now is made only if it did go out. One whose send failed for good and that no
        edit has put in the chat since is withdrawn too (its failure dismissed: re-sent by the
        operator's retry, it too would follow the answer)."""
        target = self._store.message(target_key)
        if target is None or target.kind not in PROGRESS_KINDS:
            return False
        return self._withdrawn(target)

    def _withdrawn(self, target: OutboxRow) -> bool:
        """`withdraw` of the progress message ``target`` (`gateway.withdrawal`)."""
        return withdrawn(target, store=self._store, sender=self._sender, in_flight=self._current.get, drop=self.drop)

    def drop(self, platform: str, chat_id: str, thread_id: str | None, predicate: Callable[[OutboxRow], bool]) -> int:
        """Mark the chat's pending parts for which ``predicate`` is true 'dropped': they are never
        sent (one already in the adapter's hands still counts as sent), nor are the pending pieces of
        one re-split (`gateway.resplit`). Returns how many of the parts ``predicate`` chose."""
        return drop_pending(self._store, (platform, chat_id, thread_id), predicate, self._resolve)

    def retry(self, row_id: int) -> bool:
        """Send a failed part again (the operator console's retry): it is pending once more, its
        give-up clock restarted, queued behind what its chat has queued. False, changing
        nothing, unless the part had failed."""
        row = self._store.requeue(row_id)
        if row is None:
            return False
        log.info("outbox: %s chat %s: %s re-queued by the operator", row.platform, row.chat_id, row.key)
        if not self._closed:
            self._sender.requeued(row)
        if row.kind in PROGRESS_KINDS and resplit.past_the_first(row.key):
            self._old_extras = True  # an older build's failed extra message, sent now: its card must finish it
        self._push(row.chat, row.id, progress=row.kind in PROGRESS_KINDS)
        return True

    def dismiss(self, row_id: int) -> bool:
        """Give up on a failed or pending part for good (the operator console's dismiss): it is
        marked dropped and never sent (one in the adapter's hands right now still counts as
        sent). False when it was neither failed nor pending."""
        row = self._store.message_by_id(row_id)
        if row is None or row.op == "split":
            return False
        if row.status == "pending":
            return self.drop(*row.chat, lambda r: r.id == row_id) == 1
        dismissed = self._store.dismiss(row_id)
        if dismissed and row.op == "file" and self._files is not None:
            self._files.remove(row.key)
        return dismissed

    def extra_messages(self, key: str) -> list[str]:
        """The keys of the messages past the first that an older build put in the chat for the progress
        message ``key`` (``{key}:0``) and its edits (`gateway.resplit.past_the_first`), one per message.
        Reads nothing when the store holds no such message of any card (asked once): what every card's end
        would otherwise pay for, a state file an older build wrote being the only one that has any."""
        if not self._has_old_extras():
            return []
        card = self._store.message(f"{key}:0")
        seen = {card.message_id} if card is not None else set()
        keys: list[str] = []
        for row in self._store.sent_progress(key):
            if resplit.past_the_first(row.key) and row.message_id not in seen:
                seen.add(row.message_id)
                keys.append(row.key)
        return keys

    def journaled(self, key: str) -> bool:
        """Whether a part with this key was ever journaled (and not yet pruned)."""
        return self._store.has_message(key)

    def mark_answered_by_sends(self, key: str) -> None:
        """Record that the turn whose answer would be keyed ``key`` (``{key}:0`` its first part) ended with none,
        what it sent saying it all (`gateway.owed_ends.answered_before`). Nothing is journaled to send: the mark is
        no part, never sent, counted or retried."""
        self._store.add_answered_by_sends(key)

    def answered_by_sends(self, key: str) -> bool:
        """Whether `mark_answered_by_sends` recorded ``key`` (and it is not yet pruned)."""
        return self._store.answered_by_sends(key)

    def texts_under(self, prefix: str) -> list[tuple[str, str]]:
        """The key and text of every part journaled under a key beginning with ``prefix``, in journal order (a
        re-split part's too, beside its pieces)."""
        return self._store.texts_under(prefix)

    def turn_messages(self, platform: str, turn_id: str) -> list[dict[str, Any]]:
        """Every message journaled for the turn, as `OutboxRows.turn_messages` gives them."""
        return self._store.turn_messages(platform, turn_id)

    def refusal(self, key: str) -> str | None:
        """What the platform refused the part under ``key`` with (`describe`: the error's class first), once it
        failed for good; None for one sent, pending, dropped or never journaled."""
        row = self._store.message(key)
        return row.last_error if row is not None and row.status == "failed" else None

    def maybe_seen(self, key: str) -> bool:
        """Whether the part under ``key`` may be in the chat: sent, being sent, or sent before
        with its answer lost. False for one that waits for its first try or for a retry after
        the platform refused it (a 429), and for one that failed or was dropped unsent."""
        row = self._store.message(key)
        if row is None:
            return False
        return row.status == "sent" or (row.status == "pending" and self._sender.maybe_seen(row))

    async def wait_sent(self, key: str, timeout: float | None = None) -> str | None:
        """The platform message id once the part under ``key`` is sent; None once it failed or
        was dropped. Waits for keys not journaled yet. TimeoutError after ``timeout`` seconds;
        `OutboxClosed` if the outbox closes first."""
        row = self._store.message(key)
        if row is not None and row.status != "pending":
            return row.message_id if row.status == "sent" else None
        if self._closed:
            raise OutboxClosed("the outbox is closed")
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(key, []).append(future)
        try:
            async with asyncio.timeout(timeout):
                return await future
        finally:
            futures = self._waiters.get(key)
            if futures is not None and future in futures:
                futures.remove(future)
                if not futures:
                    del self._waiters[key]

    # --- internals ----------------------------------------------------------------------

    def _has_old_extras(self) -> bool:
        if self._old_extras is None:
            self._old_extras = any(resplit.past_the_first(k) for k in self._store.sent_progress_extras())
        return self._old_extras

    def _existing(self, key: str) -> list[str]:
        keys: list[str] = []
        while self._store.has_message(f"{key}:{len(keys)}"):
            keys.append(f"{key}:{len(keys)}")
        return keys

    def _journal(self, rows: list[NewMessage]) -> None:
        self._queue(rows, self._store.add_messages(rows))

    def _sends_now(self, chat: ChatKey) -> bool:
        """Whether a part journaled now for ``chat`` is tried at once (its chat has nothing queued, its
        platform takes calls; a pace may hold it a second or so): it is journaled tried, in the commit
        its journaling needs anyway, so the sender's mark before its call writes nothing."""
        return self._started and not self._closed and not self._queues.get(chat) and self._sender.calls(chat[0])

    def _queue(self, rows: list[NewMessage], ids: list[int | None]) -> None:
        """Queue the rows just journaled (None: a key journaled before, left alone)."""
        for row, row_id in zip(rows, ids, strict=True):
            if row_id is not None:
                if self._started and not self._closed:
                    self._sender.journaled(row_id)
                self._push((row.platform, row.chat_id, row.thread_id), row_id, progress=row.kind in PROGRESS_KINDS)

    def _push(self, chat: ChatKey, row_id: int, *, progress: bool) -> None:
        if not self._started or self._closed:
            return  # journaled: the next start() sends it
        self._queues.setdefault(chat, ChatQueue()).push(row_id, progress)
        self._queued += 1
        self._idle.clear()
        if chat not in self._tasks:
            self._tasks[chat] = asyncio.get_running_loop().create_task(self._run(chat), name=f"outbox {chat}")

    async def _run(self, chat: ChatKey) -> None:
        """The chat's sender: one part at a time, to a final state, then the next; a progress
        part that is still waiting gives way to a newly queued urgent one. Exits when the
        queue is empty; the next enqueue starts a new one."""
        queue = self._queues[chat]
        delay = BACKOFF_FIRST
        try:
            while queue:
                row_id, progress = queue.head()
                self._current[chat] = row_id
                queue.urgent_arrived.clear()
                preempt = queue.urgent_arrived if progress else None
                try:
                    done = await self._sender.deliver(row_id, preempt=preempt)
                except Exception as exc:
                    # The store failed under us, reading the part or recording what became of it.
                    # The part stays at the head: what the chat has queued behind it waits.
                    wait = delay * (0.75 + 0.5 * self._rng.random())
                    # A full disk the database has said once holds every chat with a reply: a line (and a
                    # traceback) per chat and try buried that one: 201 chats waiting five tries logged 1,006 ERRORs.
                    told = self._store.told_down(exc)
                    log.log(logging.DEBUG if told else logging.ERROR,
                            "outbox: %s chat %s: the store failed delivering row %s (%s: %s); the chat"
                            " tries it again in %.1fs", chat[0], chat[1], row_id, type(exc).__name__, exc, wait,
                            exc_info=exc if delay == BACKOFF_FIRST and not told else None)
                    delay = min(delay * 2, BACKOFF_MAX)
                    await self._sender.held_back((*queue.urgent, *queue.progress), wait, preempt)
                    continue
                delay = BACKOFF_FIRST
                if done:
                    queue.pop(progress)
                    self._queued -= 1
        finally:
            self._current.pop(chat, None)
            if not queue:
                self._queues.pop(chat, None)
            self._tasks.pop(chat, None)
            self._stirred.set()
            if self._queued == 0 or self._closed:
                self._idle.set()

    def _resolve(self, key: str, message_id: str | None) -> None:
        """A part is settled (sent, failed or dropped): its waiters learn how, and the copy of a
        file is removed unless the send failed (the operator may retry it)."""
        if self._files is not None and ":file:" in key:  # the keys `send_file` journals
            row = self._store.message(key)
            if row is not None and row.op == "file" and row.status != "failed":
                self._files.remove(key)
        for future in self._waiters.pop(key, []):
            if not future.done():
                future.set_result(message_id)


async def _in_thread(work: Callable[[], T], *, keep: bool, cancelled: bool) -> tuple[T, bool]:
    """What ``work`` returns, run in a worker thread, and whether the caller was cancelled (``cancelled``: before).
    A cancellation meanwhile is raised, the thread left to finish (it cannot be stopped), unless ``keep`` and it is
    the first: then ``work`` is waited for, and a second one raised."""
    done = asyncio.ensure_future(asyncio.to_thread(work))
    try:
        return await asyncio.shield(done), cancelled
    except asyncio.CancelledError:
        if not keep or cancelled:
            raise
        return await done, True


def _called(reply_to: str | Callable[[], str | None] | None) -> str | None:
    return reply_to() if callable(reply_to) else reply_to
