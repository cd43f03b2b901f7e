"""Slack events the adapter leaves unacknowledged, so that Slack sends them again, and what is logged
of them.

bolt answers 500 for a listener that raised (Socket Mode: the envelope stays unacknowledged), and
logged "Failed to run listener function" with a traceback for each: every message a stop turned
away, every full disk, and beside the adapter's own line. `listener_failed` is bolt's error handler
instead: one line per event, naming it, with a traceback only where the failure is a bug.
"""

from __future__ import annotations

import logging
from typing import Any

from platforms.base import DeliveryError, NetworkError
from platforms.not_recorded import storage_refusal

log = logging.getLogger("platforms.slack")


class Stopping(NetworkError):
    """A message that came during a stop: unacknowledged, so Slack sends it again, to the next process."""


class SentAgain(Exception):
    """A message the gateway did not take before the ack, told where that was seen (`Delivery.settled`)."""


async def listener_failed(error: Exception, body: dict[str, Any]) -> None:
    """bolt's error handler (see the module docstring): a stop's refusal in an `INFO` line, a hand-over's
    failure not at all (`slack_delivery.Delivery.settled` told it), a platform or disk that failed in a warning,
    anything else, a bug, with its traceback."""
    if isinstance(error, SentAgain):
        return
    event = body.get("event") or {}
    if "channel" in event and "ts" in event:
        where = f"{event.get('type', 'event')} {event['channel']}:{event['ts']}"  # as the adapter names a message
    elif body.get("command"):
        where = f"{body['command']} from user {body.get('user_id')}"
    else:
        where = f"{event.get('type') or body.get('type') or 'event'} {body.get('event_id') or ''}".strip()
    if isinstance(error, Stopping):
        log.info("slack: %s", error)
    elif isinstance(error, DeliveryError) or storage_refusal(error):
        log.warning("slack: %s not taken (%s: %s); not acknowledged, so Slack sends it again", where,
                    type(error).__name__, error)
    else:
        log.error("slack: %s failed; not acknowledged, so Slack sends it again", where, exc_info=error)
