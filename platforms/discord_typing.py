"""Discord's typing indicator, shown while a turn runs.

Apart from the adapter (`platforms.discord`) because its failures are told apart from a send's: the
gateway refreshes it every few seconds, so a channel that refuses it is warned of once per reason
(`platforms.repeated_warnings`), not at every refresh. Logged under ``platforms.discord``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from platforms.base import Unauthorized
from platforms.discord_errors import FAILED, delivery_error
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.repeated_warnings import RepeatedWarnings

log = logging.getLogger("platforms.discord")

TYPING = "POST /channels/{channel_id}/typing"


class Typing:
    """The indicator in one channel or thread at a time, with the warnings said so far."""

    def __init__(self, channel: Callable[[str], discord.PartialMessageable]) -> None:
        self._channel = channel
        self._failures = RepeatedWarnings(log)

    async def show(self, chat_id: str, thread_id: str | None) -> None:
        """Refreshed every few seconds while a turn runs: a channel that refuses it for one reason
        (deleted, or the bot's permission gone) is warned of once (`platforms.repeated_warnings`)."""
        target = thread_id or chat_id
        try:
            await self._channel(target).typing()
        except Exception as exc:
            error = delivery_error(exc, route=TYPING, chat_id=target)
            if not isinstance(error, Unauthorized):  # a refused token is said once for all (`discord_token`)
                self._failures.warning((target, type(error).__name__), FAILED, TYPING, target,
                                       type(error).__name__, error)
            raise error from exc
