"""How far the gateway has taken in each Slack conversation: the last-seen record the catch-up at
the next start reads after (`platforms.slack_catchup`), never past a message Slack was told was
taken but the gateway does not have.

The adapter acks Slack at most ``sink_timeout`` after handing a message on, finished or not (a slow
store, a live message waiting for its conversation's catch-up), and Slack never sends an acked
message again. While such a message is unsettled, a later one in its conversation is recorded only
up to just before it (a crash then leaves it to the next start's catch-up); a live message is
unsettled from the moment it comes, its files not read yet. A message the store
refuses is handed on again until it is taken (`platforms.slack_handover`), as Discord's are: the
next start may be days away, past what its catch-up reads back. One that failed before the ack, which
Slack sends again, holds its conversation just before it too until it is taken, moving the record back
if a later one Slack sent first was recorded already (a crash before it is taken, or Slack giving up,
must not leave it behind the record). One a stop cuts short, or turns away
unacked (Slack sends it again only for a few minutes), holds its conversation just before it, moving
the record back if a message Slack sent out of order was recorded past it; the next start reads it
back, and the inbox drops the later ones answered meanwhile.

Apart from the adapter (`platforms.slack`) because it is one concept, the record's bookkeeping.
Logged under ``platforms.slack``.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence

from platforms.base import SeenLookup, SeenRecorder
from platforms.slack_catchup import Where, conversation_key, ts_key, where_of

log = logging.getLogger("platforms.slack")

REMEMBERED_NEWEST = 10_000
"""Conversations whose newest message taken in is kept in memory, the most recently recorded: far
more than a catch-up reads (`Limits.max_conversations`). For one dropped (or never loaded) the
gateway's store is asked (`TakenIn.bind`'s ``stored``), so that its record is never moved back past
what was taken there, nor forward past a message not taken."""


def just_before(ts: str) -> str:
    """The ts one microsecond before ``ts``: a catch-up reading after it reads ``ts`` again."""
    seconds, micros = ts_key(ts)
    if micros:
        return f"{seconds}.{micros - 1:06d}"
    return f"{seconds - 1}.999999"


class TakenIn:
    """The newest message taken in per conversation, as recorded, and the messages being handed on."""

    def __init__(self, remembered: int = REMEMBERED_NEWEST) -> None:
        """``remembered``: conversations whose newest message taken in is kept in memory."""
        self._remembered = remembered
        self.last_seen: dict[Where, str] = {}
        """As the gateway's store had it at start: what the catch-up reads after."""
        self._newest: OrderedDict[Where, str] = OrderedDict()
        """As recorded, least recently recorded first: the latest ``remembered``."""
        self._seen: SeenRecorder = lambda conversation, ts: None
        self._stored: SeenLookup = lambda conversation: None
        self._unsettled: dict[Where, set[str]] = {}
        """Messages handed on and neither taken nor failed yet, by conversation."""
        self._lost: dict[Where, set[str]] = {}
        """Messages there that were not taken (unless Slack sent one again, taken then)."""
        self._held: dict[Where, str] = {}
        """The newest message taken in where an older one holds the record back: recorded once none does."""

    def bind(self, last_seen: Mapping[str, str], seen: SeenRecorder, stored: SeenLookup) -> None:
        """What the gateway's store has (conversation -> ts), ``seen`` to record in it, and ``stored``
        to read one conversation's record from it."""
        self.last_seen = {where_of(key): ts for key, ts in last_seen.items()}
        newest = sorted(self.last_seen.items(), key=lambda item: ts_key(item[1]))[-self._remembered:]
        self._newest, self._seen, self._stored = OrderedDict(newest), seen, stored

    def recorded(self) -> dict[Where, str]:
        """The newest message recorded as taken in, of each conversation remembered: what a catch-up after
        Socket Mode's outage reads after."""
        return dict(self._newest)

    def handing_on(self, conversations: Sequence[Where], ts: str) -> None:
        """A message is handed on, to be `taken` or `not_taken` (a crash between: neither)."""
        for where in conversations:
            self._unsettled.setdefault(where, set()).add(ts)

    def taken(self, conversations: Sequence[Where], ts: str, record: Sequence[Where]) -> None:
        """The gateway has the message: settled in ``conversations``, recorded in those of ``record``
        (the others the catch-up records) as far as no older message holds the record back."""
        for where in conversations:
            for marks in (self._unsettled, self._lost):
                if ts in marks.get(where, ()):
                    marks[where].discard(ts)
                    if not marks[where]:
                        del marks[where]
        for where in record:
            self.mark(*where, ts)
        for where in conversations:
            if (held := self._held.pop(where, None)) is not None:
                self.mark(*where, held)

    def sent_again(self, conversations: Sequence[Where], ts: str) -> None:
        """The gateway failed to take the message before Slack was acked for it: Slack sends it again,
        and later messages are held just before it until it is taken (Slack gives up after a few minutes:
        one the store refused the adapter hands over again meanwhile, `platforms.slack_handover.Retries`;
        should it fail for another reason, the next start reads it back). A newer message Slack sent
        first (it does not order events) and recorded past it, the record moves back just before it,
        and forward again once it is taken: else a crash before then, or Slack giving up, lost it for
        good, the next start reading after the newer one."""
        for where in conversations:
            self._unsettled.get(where, set()).discard(ts)
            self._lost.setdefault(where, set()).add(ts)
            self._back_before_lost(where)

    def not_taken(self, conversations: Sequence[Where], ts: str, *, told: bool = False) -> None:
        """The gateway does not have the message, which Slack may not send again: each of its
        conversations is recorded just before it, for the next start to read it back, and no further.
        Logged, unless the adapter ``told`` of it already (a message a stop turned away)."""
        for where in conversations:
            self._unsettled.get(where, set()).discard(ts)
            self._lost.setdefault(where, set()).add(ts)
            if self._back_before_lost(where) and not told:
                log.warning("slack: message %s in %s was not taken by the gateway; the next start reads it back",
                            ts, conversation_key(where))

    def _back_before_lost(self, where: Where) -> bool:
        """Record ``where`` just before its oldest message not taken (or unsettled) if it was recorded past
        that, the newest recorded held to be recorded again once none holds the record back; whether it
        moved. Never forward: the messages after the record may not be read yet."""
        position = just_before(min(self._lost[where] | self._unsettled.get(where, set()), key=ts_key))
        newest = self._recorded(where)
        if newest is not None and ts_key(newest) <= ts_key(position):
            return False
        if newest is not None and ((held := self._held.get(where)) is None or ts_key(held) < ts_key(newest)):
            self._held[where] = newest
        self._record(where, position)
        return True

    def mark(self, channel: str, thread_ts: str | None, ts: str) -> None:
        """``ts`` was taken in there: recorded unless a newer one was (Slack does not order events), or
        held just before an older message that is unsettled or was not taken."""
        where = (channel, thread_ts)
        older = [b for marks in (self._unsettled, self._lost) for b in marks.get(where, ()) if ts_key(b) < ts_key(ts)]
        if older:
            held = self._held.get(where)
            if held is None or ts_key(held) < ts_key(ts):
                self._held[where] = ts
            ts = just_before(min(older, key=ts_key))
        newest = self._recorded(where)
        if newest is not None and ts_key(newest) >= ts_key(ts):
            return
        self._record(where, ts)

    def _recorded(self, where: Where) -> str | None:
        """The newest message recorded as taken in there: as remembered, else as the store has it."""
        if (newest := self._newest.get(where)) is not None:
            return newest
        try:
            return self._stored(conversation_key(where))
        except Exception:  # as if none were: a store that cannot read cannot write either
            log.exception("slack: could not read the newest message taken in from %s", where[0])
            return None

    def _record(self, where: Where, ts: str) -> None:
        self._newest[where] = ts
        self._newest.move_to_end(where)
        if len(self._newest) > self._remembered:
            self._newest.popitem(last=False)
        try:
            self._seen(conversation_key(where), ts)
        except Exception:  # at worst the next start reads the conversation again, the inbox dropping repeats
            log.exception("slack: could not record the newest message taken in from %s", where[0])
