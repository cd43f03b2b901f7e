"""An HTTP ``Date`` header as epoch seconds: the platforms' own clock, which the catch-ups bound their reads by
(`platforms.slack_catchup`, `platforms.discord_catch_up`) where the host's may be off by minutes or days."""

from __future__ import annotations

from datetime import timezone
from email.utils import parsedate_to_datetime


def date_of(value: str | None) -> float | None:
    """``value`` (a ``Date`` header) as epoch seconds; None when missing or unreadable. An HTTP date is in GMT, the
    asctime form that RFC 9110 still has recipients take included, which names no zone: read as the host's local
    time, it put the platform's clock off by the host's time zone."""
    try:
        date = parsedate_to_datetime(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return date.replace(tzinfo=date.tzinfo or timezone.utc).timestamp()
