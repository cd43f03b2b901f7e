"""How often a user the gateway does not serve is told so.

A refusal answers the first message of a user who is not allowed (`gateway.access`). Where
the bot hears every message without being addressed (a Slack or Discord thread it is in), such
a user talking to the others would get one refusal per message, as would one who keeps replying
to the bot in a Telegram group, or who mentions it again and again in a Slack channel (each
mention there opens a thread of its own). So a user is refused at most once per chat in
`QUIET_SECONDS`, in whichever of its threads they wrote first; their later messages there are
dropped without an answer (and logged). A slash command answered through its platform (a Slack
or Discord one, which carries a ``reply_token``) is always answered: its "thinking…" waits for one,
and nothing else tells them it did nothing; only its user sees it (on Discord the adapter, told of the
refusal, deletes the "thinking…" the channel saw and answers with an ephemeral follow-up). A Telegram
command is a message of the chat like any other, seen by the whole group: refused as often as one.
The refusals of the last `QUIET_SECONDS` are read back from the outbox's journal at start
(`told`), so a restart neither refuses the same user there again, nor answers a message
of theirs replayed from the inbox (it came before the restart) with a second refusal.
"""

from __future__ import annotations

from collections import OrderedDict

from agent import Clock
from platforms.base import Inbound

QUIET_SECONDS = 3600.0
"""After a refusal, the same user's messages in the same chat get none for this long."""
REMEMBERED = 10_000
"""Refusals remembered at most; the oldest are forgotten first (and may be refused again)."""

_Key = tuple[str, str, str]


class Refusals:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._told: OrderedDict[_Key, float] = OrderedDict()  # oldest refusal first

    def told(self, platform: str, chat_id: str, thread_id: str | None, user_id: str, ago: float) -> None:
        """A refusal given ``ago`` seconds ago (by an earlier process), in any thread of the chat;
        call oldest first."""
        key = (platform, chat_id, user_id)
        self._told.pop(key, None)  # the newest counts, and stays in age order
        self._told[key] = self._clock.monotonic() - ago

    def due(self, inbound: Inbound) -> bool:
        """Whether this refused event gets a refusal (and, if so, counts it as given now)."""
        if inbound.is_command and inbound.reply_token is not None:
            return True
        now = self._clock.monotonic()
        while self._told and (len(self._told) >= REMEMBERED or next(iter(self._told.values())) <= now - QUIET_SECONDS):
            self._told.popitem(last=False)
        # Not by thread: a Slack mention in a channel opens a thread of its own, so a stranger mentioning
        # the bot there again and again would be refused under each mention.
        key = (inbound.platform, inbound.chat_id, inbound.user_id)
        if key in self._told:
            return False
        self._told[key] = now
        return True

    def undo(self, inbound: Inbound) -> None:
        """The refusal `due` counted for ``inbound`` was not given (its answer not saved): the event,
        handled again, is refused again."""
        if not (inbound.is_command and inbound.reply_token is not None):  # `due` counted none
            self._told.pop((inbound.platform, inbound.chat_id, inbound.user_id), None)
