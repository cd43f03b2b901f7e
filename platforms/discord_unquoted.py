"""Channels where Discord refuses the bot's replies: the answers there go unquoted at once, for a while.

Where the bot lacks Read Message History, Discord refuses a reply (403, code 160002) but takes a plain post
(`platforms.discord_posts`). Learnt once, each later answer there would pay a refused call first (a slot of
the channel's rate limit, and one more of the invalid requests Discord bars a bot for), so the channel is
remembered as refusing replies for `REFUSED_FOR` seconds, then a reply is tried again: a permission granted
meanwhile takes effect without a restart. The `REMEMBERED` most recently refused channels are kept; one
forgotten only costs a refused call again.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable

from platforms.recent import remember
from platforms.repeated_warnings import RepeatedWarnings

log = logging.getLogger("platforms.discord")

REFUSED_FOR = 600.0
"""Seconds a channel's refusal of the bot's replies is trusted before a reply is tried there again."""
REMEMBERED = 1000
"""Channels whose refusal is kept, the most recently refused."""
WARN_EVERY = 86400.0
"""Seconds between two warnings for one channel whose replies are still refused (one a day, counted between)."""


class RefusedReplies:
    def __init__(self, clock: Callable[[], float], *, refused_for: float = REFUSED_FOR,
                 remembered: int = REMEMBERED) -> None:
        """``clock``: seconds (the adapter's)."""
        self._clock = clock
        self._refused_for = refused_for
        self._remembered = remembered
        self._until: OrderedDict[str, float] = OrderedDict()
        self._warnings = RepeatedWarnings(log, window=WARN_EVERY, clock=clock, causes=remembered)

    def refused(self, channel: str) -> bool:
        """Whether replies in ``channel`` (a thread's own id for a thread) were refused less than
        `REFUSED_FOR` seconds ago."""
        until = self._until.get(channel)
        if until is None:
            return False
        left = until - self._clock()
        if 0 < left <= self._refused_for:  # past it, or a clock set back: tried again
            return True
        del self._until[channel]
        return False

    def learnt(self, channel: str) -> None:
        """Discord refused a reply in ``channel`` and took the same message unquoted."""
        remember(self._until, channel, self._clock() + self._refused_for, self._remembered)
        self._warnings.warning(channel, "discord: channel %s refused the bot's reply (403, code 160002) but"
                               " took it as a plain message: the bot lacks Read Message History there, which"
                               " Discord requires of a reply; its answers there do not quote the message they"
                               " answer (a reply is tried again every %.0f minutes)", channel,
                               self._refused_for / 60)
