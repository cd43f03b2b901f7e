"""How often a user the gateway does not serve is told so.

A refusal answers the first message of a user who is not allowed (`gateway.access`). Where
the bot hears every message without being addressed (a Slack or Discord thread it is in), such
a user talking to the others would get one refusal per message, as would one who keeps replying
to the bot in a Telegram group. So a user is refused at most once per chat or thread in `QUIET_SECONDS`;
their later messages there are dropped without an answer (and logged). A slash command is
always answered: only its user sees the answer, and nothing else tells them it did nothing.
The refusals of the last `QUIET_SECONDS` are read back from the outbox's journal at start
(`told`), so a restart neither refuses the same user there again, nor answers a message
of theirs replayed from the inbox (it came before the restart) with a second refusal.
"""

from __future__ import annotations

from collections import OrderedDict

from agent import Clock
from platforms.base import Inbound

QUIET_SECONDS = 3600.0
"""After a refusal, the same user's messages in the same chat or thread get none for this long."""
REMEMBERED = 10_000
"""Refusals remembered at most; the oldest are forgotten first (and may be refused again)."""

_Key = tuple[str, str, str | None, str]


class Refusals:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._told: OrderedDict[_Key, float] = OrderedDict()  # oldest refusal first

    def told(self, platform: str, chat_id: str, thread_id: str | None, user_id: str, ago: float) -> None:
        """A refusal given ``ago`` seconds ago (by an earlier process); call oldest first."""
        self._told[(platform, chat_id, thread_id, user_id)] = self._clock.monotonic() - ago

    def due(self, inbound: Inbound) -> bool:
        """Whether this refused event gets a refusal (and, if so, counts it as given now)."""
        if inbound.is_command:
            return True
        now = self._clock.monotonic()
        while self._told and (len(self._told) >= REMEMBERED or next(iter(self._told.values())) <= now - QUIET_SECONDS):
            self._told.popitem(last=False)
        key = (inbound.platform, inbound.chat_id, inbound.thread_id, inbound.user_id)
        if key in self._told:
            return False
        self._told[key] = now
        return True
