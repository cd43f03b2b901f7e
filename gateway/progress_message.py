"""One progress message in the outbox — a notice or a card: sent once, edited in place,
then finalised to one line or deleted.

Its key is derived from what it reports on (a turn, a background delegation), so a run
of that work replayed after a restart edits the message its first run sent, and a
stale one left by a crash can still be finalised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from gateway.outbox import Outbox
from gateway.sessions import ChatKey

log = logging.getLogger("gateway.progress_message")

_PLAIN = str.maketrans(":/", "__")
CHAT_GONE = ("Forbidden", "NotFound")
"""Refusals of a progress message's state that say the chat takes no message of the bot's (it was removed from
it, blocked, the chat deleted): an edit the platform cannot make is sent anew (`Outbox.enqueue_edit`), so a
state refused so was refused as a message in that chat."""


class ProgressMessage:
    def __init__(self, outbox: Outbox, chat: ChatKey, key: str, *, turn_id: str, run_id: str) -> None:
        self._outbox = outbox
        self._chat = chat
        self._key = key
        self._turn_id = turn_id
        self._run_id = run_id
        """Distinguishes this run's edits from a replayed run's (their keys must differ)."""
        self._last: str | None = None
        """The key of the latest state this run published."""
        self._refused = False

    @property
    def target(self) -> str:
        return f"{self._key}:0"

    @property
    def exists(self) -> bool:
        """Whether the message was ever journaled (by this run or an earlier one)."""
        return self._outbox.journaled(self.target)

    def publish(self, text: str, n: int) -> None:
        """The ``n``-th state of the message: sent the first time, else an edit of it. Only as much of
        ``text`` as fits one message of the platform is shown (`_one_message`). Nothing once the chat refused
        an earlier state for good (`CHAT_GONE`): each state, every 2 s while subagents run, would be one more call
        refused and one more failure logged and kept, for as long as the work runs. `finish` still tries once."""
        if self._chat_gone():
            return
        if n == 0 and not self.exists:
            keys = self._outbox.enqueue(*self._chat, text, kind="notice", key=self._key, turn_id=self._turn_id,
                                        silent=True)
        else:
            keys = self._outbox.enqueue_edit(*self._chat, self.target, text,
                                             key=f"{self._key}-edit-{self._run_id}-{n}")
        self._one_message(keys)
        if keys:
            self._last = keys[0]

    def _chat_gone(self) -> bool:
        if not self._refused and self._last is not None:
            refusal = self._outbox.refusal(self._last)
            if refusal is not None and refusal.partition(":")[0] in CHAT_GONE:
                self._refused = True
                log.info("%s chat %s refused progress message %s (%s): it is not updated until its work ends",
                         self._chat[0], self._chat[1], self._key, refusal)
        return self._refused

    def _one_message(self, keys: list[str]) -> None:
        """Drop the parts after the first of a text the outbox split to the platform's limit (a card of
        many subagents whose goals are rich in formatting: Telegram reads at most 100 entities in a
        message). Each would be a message of its own, sent anew with every edit (every 2 s while subagents
        run) and never finalised, the chat filling with stale lines: the message shows what fits of it.
        Journaled a moment ago, none of them can have gone out."""
        rest = set(keys[1:])
        if rest:
            self._outbox.drop(*self._chat, lambda row: row.key in rest)

    def finish(self, final: str | None, *, delete: bool) -> bool:
        """The work is over: delete the message (where the platform can; else it reads
        ``final``), or edit it to ``final``; with ``final`` None (a platform that cannot change
        it), leave it as it is. One that has not reached the chat yet never will, nor its final line,
        also where its send failed for good (`Outbox.withdraw`): after the answer it would be news of nothing.
        False when so, or when there was none: the chat was never shown the work."""
        if not self.exists or self._outbox.withdraw(*self._chat, self.target):
            return False
        if final is None:
            return True
        key = f"{self._key}-final-{self._run_id}"
        if delete:
            self._outbox.enqueue_delete(*self._chat, self.target, final, key=key)
        else:
            self._outbox.enqueue_edit(*self._chat, self.target, final, key=key)
        # An older build's card in several messages (upgraded mid-turn): those past the first, never edited
        # since, would show its lines for good. Deleted, or where the platform cannot, reading ``final``.
        for extra in self._outbox.extra_messages(self._key):
            name = extra.removeprefix(self._key).translate(_PLAIN)  # no ':' or '/': a key of its own, not a part's
            self._outbox.enqueue_delete(*self._chat, extra, final, key=f"{key}-extra{name}")
        return True


def covered_by(own: ProgressMessage, other: ProgressMessage) -> Callable[[], bool]:
    """Whether ``own`` is to stay unsent because ``other``, the one progress message of the same work, is in the
    chat: the turn delivering a background delegation's results and that delegation's card (keyed by the same turn
    id) would show two cards of one piece of work, the delegation's reading `⏳ … 2 of 2 done` above the turn's. The
    first to be journaled shows it, the other is never sent (what it would publish is dropped, its finish finds
    nothing to finalise); one already journaled (a replay after a restart) goes on. Decided at its first state,
    then kept: a message left unsent, asked to change, would be sent anew."""
    decided: list[bool] = []

    def covered() -> bool:
        if not decided:
            decided.append(not own.exists and other.exists)
        return decided[0]

    return covered
