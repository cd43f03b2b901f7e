"""A ``Retry-After`` as seconds to wait, read one way for every platform and the webhook receivers.

HTTP allows delta-seconds or an HTTP-date (RFC 9110 §10.2.3). Slack and Discord send seconds, but a proxy in
front of them may send a date; a webhook receiver may send either. What is no wait (text, NaN, infinite, a
negative number) is None, for the caller's default: NaN passed the outbox's cap (``min(nan, cap)`` is NaN), and
infinity held a wait for good. A date already past is no wait at all: 0.
"""

from __future__ import annotations

import datetime
import email.utils
import math
import time


def seconds(value: object) -> float | None:
    """``value`` as a wait in seconds, or None for what is none (text, NaN, infinite, negative)."""
    try:
        wait = float(value)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return None
    return wait if math.isfinite(wait) and wait >= 0 else None


def header_seconds(header: str | None, now: float | None = None) -> float | None:
    """The seconds a ``Retry-After`` header asks for, a date read against ``now`` (epoch seconds; the system
    clock by default), or None when absent or unreadable."""
    if header is None or not header.strip():
        return None
    if (wait := seconds(header.strip())) is not None:
        return wait
    try:
        when = email.utils.parsedate_to_datetime(header.strip())
    except (ValueError, TypeError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000", or the asctime form: GMT all the same, not this machine's local time
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)
