"""Telegram's flood control for the fake, opt-in (`FakeTelegram.enforce_flood_limits`).

Telegram's bot FAQ ("My bot is hitting limits, how do I avoid this?") gives three limits on
what a bot writes: about one message a second in one chat, at most 20 messages a minute to
one group, and about 30 messages a second overall. Past them it answers 429 "Too Many
Requests: retry after N" with ``parameters.retry_after``. Each limit is kept here as a sliding
window of the writes it let through (message sends and edits: an edit is a write as much as a
send), per chat, per group (a chat whose id is negative: groups, supergroups, channels) and
overall. A write that would put more than a window's count in it is refused, with
``retry_after`` the whole seconds until the oldest write in that window leaves it; a refused
write did nothing, so it is not counted. Topics of a forum group are one chat to Telegram, so
they share its windows.

Telegram "may allow short bursts" over one a second in a chat; this fake does not, so a bot
it never refuses keeps inside Telegram's limits with room to spare.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from platforms.fakes._sliding_windows import MonotonicClock, SlidingWindows, Window
from platforms.fakes._telegram_api import ApiError

__all__ = ["OVERALL", "PER_CHAT", "PER_GROUP", "FloodControl", "MonotonicClock", "Window"]

WRITES = frozenset({"sendmessage", "editmessagetext", "sendphoto", "senddocument"})
"""The methods that put a message in a chat or change one: what the limits count."""


PER_CHAT = Window(1, 1.0)
PER_GROUP = Window(20, 60.0)
OVERALL = Window(30, 1.0)


@dataclass(frozen=True)
class Write:
    at: float
    """When it was let through, on the fake's clock."""
    method: str
    chat_id: str


@dataclass(frozen=True)
class Refusal:
    at: float
    method: str
    chat_id: str
    retry_after: int
    limit: str
    """Which window was full: ``chat``, ``group`` or ``overall``."""


class FloodControl:
    """The three windows, the writes they let through (`writes`) and the 429s they gave (`refused`)."""

    def __init__(self, clock: MonotonicClock, *, per_chat: Window = PER_CHAT, per_group: Window = PER_GROUP,
                 overall: Window = OVERALL) -> None:
        self._windows = SlidingWindows(clock)
        self._limits = {"chat": per_chat, "group": per_group, "overall": overall}
        self.writes: list[Write] = []
        """Every write let through, in order."""
        self.refused: list[Refusal] = []
        """Every 429 given, in order."""

    def admit(self, method: str, params: Mapping[str, Any]) -> Write | None:
        """Count a call of ``method`` that is a write (None for any other call), or raise the 429
        Telegram would answer. Call `withdraw` with the write if the method then fails."""
        if method.lower() not in WRITES or params.get("chat_id") in (None, ""):
            return None
        chat = str(params["chat_id"])
        now = self._windows.now()
        keys = _windows_of(chat)
        for kind, key in keys:
            retry_after = self._windows.retry_after((kind, key), self._limits[kind], now)
            if retry_after is not None:
                self.refused.append(Refusal(now, method, chat, retry_after, kind))
                raise ApiError(429, f"Too Many Requests: retry after {retry_after}", retry_after)
        self._windows.count(keys, now)
        write = Write(now, method, chat)
        self.writes.append(write)
        return write

    def withdraw(self, write: Write) -> None:
        """The write was refused for another reason (a bad request): it never reached the chat."""
        self.writes.remove(write)
        self._windows.uncount(_windows_of(write.chat_id), write.at)


def _windows_of(chat: str) -> list[tuple[str, str]]:
    """The windows a write to ``chat`` counts in: its own, its group's (a negative id), everyone's."""
    return [("chat", chat), ("overall", "")] + ([("group", chat)] if chat.startswith("-") else [])
