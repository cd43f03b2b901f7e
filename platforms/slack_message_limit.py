"""Slack's workspace-wide message limit, as the Slack adapter keeps it between calls.

Apart from the posts (`platforms.slack_posts`) because slash-command answers (`platforms.slack_commands`), which
the posts' module imports, and placeholders (`platforms.slack_placeholders`) are held by it too.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from platforms.slack_errors import MessageLimitExceeded


class MessageLimit:
    """Slack's ``message_limit_exceeded``: a free workspace's limit on messages ("you may be prevented from
    sending too many messages or files in a short period of time", Slack's help on the free plan's limits),
    the workspace's, not one channel's. Met in one channel, every channel's posts and file shares wait it out
    (its ``Retry-After``, a minute when it names none, ``max_retry_after`` at most): refused here at once, as
    the rate limit it is (`MessageLimitExceeded`, for what is left of the wait), without calling Slack, which
    the outbox waits out in that channel and tries again, in order (not a word nothing tries again: `posting`);
    not ``called``, so not counted as an answer of Slack's (``switchboard_platform_rate_limited_total``). Each
    other channel met it anew, at a call Slack counts too, and held only itself, for a minute from then.
    ``monotonic`` measures the wait."""

    def __init__(self, *, max_retry_after: float = 60.0, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._max_retry_after, self._monotonic = max_retry_after, monotonic
        self._until = 0.0

    def held(self) -> float:
        """Seconds the workspace's posts still wait; 0 when they may go."""
        return max(0.0, self._until - self._monotonic())

    @contextlib.contextmanager
    def posting(self, method: str, chat_id: str, *, once: bool = False) -> Iterator[None]:
        """Around a call that posts a message to ``chat_id``: refused while the limit holds; one that meets it
        holds every channel's. ``once``: a word nothing sends again (what became of a slash command,
        `platforms.slack_commands.tell`) is tried all the same: refused here, its user would never hear it,
        while Slack may take it (the hold's length is the adapter's reckoning, a minute when Slack names none, and
        a command's ``response_url`` is no Web API post); one that meets the limit holds the others still."""
        if not once and (left := self.held()) > 0:
            raise MessageLimitExceeded(f"{method}: message_limit_exceeded (the workspace's, met in a call before;"
                                       f" not asked again for {left:.0f} s)", retry_after=left, called=False,
                                       method=method, chat_id=chat_id, platform="slack")
        try:
            yield
        except MessageLimitExceeded as exc:
            self._until = max(self._until, self._monotonic() + min(exc.retry_after, self._max_retry_after))
            raise
