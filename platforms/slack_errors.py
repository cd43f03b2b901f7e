"""Slack's answers as `DeliveryError`s: the one translation point of the Slack adapter.

Apart from the adapter (`platforms.slack`) because it is a table of Slack's error codes and
one function over it, which the adapter's every Web API call, its slash-command answers and
its uploads go through; logged under ``platforms.slack`` like the rest of the adapter. Through
`platforms.repeated_warnings`, the Web API calls warn once of a failure all of Slack shares (an
outage, a rate limit) rather than once per call of every chat retrying through it, and once per
channel of that channel's own refusal. A call whose caller says what became of it (the outbox of a
part, the gateway of a file it could not take) logs that channel's own refusal at DEBUG only: it was
a second warning of one refusal.
"""

from __future__ import annotations

import logging
import re
import socket
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from yarl import URL

from platforms.base import (
    BadRequest,
    DeliveryError,
    EditUnsupported,
    Forbidden,
    MessageTooLong,
    NetworkError,
    NotFound,
    RateLimited,
    Unauthorized,
)
from platforms.proxies import proxy_refusal
from platforms.repeated_warnings import RepeatedWarnings
from platforms.retry_after import header_seconds
from platforms.slack_connection import REFUSED

log = logging.getLogger("platforms.slack")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")

_NOT_FOUND = {"channel_not_found", "message_not_found", "thread_not_found", "user_not_found", "expired_url",
              "used_url", "file_not_found", "file_deleted"}
_FORBIDDEN = {"not_in_channel", "is_archived", "missing_scope", "no_permission", "not_allowed_token_type",
              "ekm_access_denied", "restricted_action", "restricted_action_read_only_channel",
              "restricted_action_thread_only_channel", "restricted_action_non_threadable_channel",
              "team_access_not_granted", "cannot_dm_bot"}
"""One channel's (or one method's) refusal. The token's own (`REFUSED`) is `Unauthorized`."""
_TOO_LONG = {"msg_too_long", "msg_blocks_too_long"}
_NO_EDIT = {"cant_update_message", "edit_window_closed", "cant_delete_message"}
_TRANSIENT = {"internal_error", "fatal_error", "service_unavailable", "request_timeout", "update_failed",
              "team_added_to_org", "org_login_required"}
"""Slack failing, not the call: chat.update's ``update_failed`` is documented as "Internal update failed". Taken
for a bad request, the edit was sent anew as a second message, the one it edits left as it was. So is
``team_added_to_org``: the workspace is being moved into an Enterprise organization, the Web API "intermittently
unavailable until the transition is complete"; and ``org_login_required``, documented for the same move ("The
workspace is undergoing an enterprise migration and will not be available until migration is complete"), no
login of anyone's that the gateway could ask for. Taken for a bad request, the answer was dropped for good."""


class MessageLimitExceeded(RateLimited):
    """``message_limit_exceeded``: a free workspace's limit on messages, the workspace's and not the channel's
    (`platforms.slack_message_limit.MessageLimit` holds every channel's posts while it lasts)."""


class UpdateFailed(NetworkError):
    """chat.update's ``update_failed``: tried again, a few times per message (`platforms.slack_posts.StuckEdits`)."""
DEFAULT_RETRY_AFTER = 1.0
"""Seconds a rate limit that names no readable ``Retry-After`` is taken to ask for."""
_RATE_LIMITED = {"ratelimited": DEFAULT_RETRY_AFTER, "rate_limited": DEFAULT_RETRY_AFTER,
                 "message_limit_exceeded": 60.0}
"""A 429's ``ratelimited``, and the ``rate_limited`` chat.postMessage documents ("Application has posted too
many messages"), which may come as any error does, HTTP 200: taken for a refusal, the answer was dropped. So
was one past a free workspace's limit on messages ("too many messages or files in a short period of time"),
``message_limit_exceeded``, with a 200 or a 429 that names no ``Retry-After``: waited out for a minute, the
window of Slack's rate limits, rather than asked again every second while it lasts. Each with the seconds
waited when Slack names none."""
_MEANING = {"file_upload_size_restricted": "the file is larger than the workspace takes"}
"""Codes said with their meaning, where the gateway reads it: a file's note says it was too large
(`gateway.part_notes.file_reason`), not merely refused."""


def translate(method: str, channel: str | None, *, status: int | None, error: str | None,
              retry_after: str | None, warn: RepeatedWarnings | None = None, needed: str | None = None,
              caller_logs: bool = False, foreign: bool = False, detail: str | None = None) -> DeliveryError:
    """The one place Slack's answers become `DeliveryError`s (and get logged: through ``warn``, when
    given, once for a cause that recurs). ``needed``: the scope a ``missing_scope`` answer names.
    ``caller_logs``: the caller logs what becomes of the call, so this channel's own refusal is logged
    at DEBUG here; a failure all of Slack shares (an outage, a rate limit) is warned of all the same.
    ``foreign``: a Web API call answered with a 2xx that is no answer of Slack's (no JSON of its own: a
    proxy's page, a body cut short), whether Slack carried the call out unknown, as for a 5xx: a
    `NetworkError`. Taken for a bad request, the part was dropped. ``detail``: what the failure said beside
    its code, said after it (`_said`). The log's line names the channel and the HTTP status only where there
    is one: a start's ``auth.test`` that reached nothing read ``(channel None): …, HTTP None``."""
    kw: dict[str, Any] = {"method": method, "chat_id": channel, "platform": "slack"}
    shown = f"{error}: the app needs the {needed} scope" if error == "missing_scope" and needed else error
    if error in _MEANING:
        shown = f"{error}: {_MEANING[error]}"
    if foreign:
        shown = "an answer that is not Slack's JSON"
    if shown and detail:
        shown = f"{shown}: {detail}"
    message = f"{method}: {shown or f'HTTP {status}'}"
    where = f" (channel {channel})" if channel else ""
    if error in REFUSED:
        # The token, not this channel: said once where it is noticed (BotToken, the outbox's hold),
        # not on every call made while it lasts.
        log.debug("slack %s refused the token%s: %s", method, where, error)
        return Unauthorized(message, **kw)
    shared = (status is None or status >= 500 or status == 429 or error in _TRANSIENT or error in _RATE_LIMITED
              or foreign)
    http = f", HTTP {status}" if shown and status is not None else ""
    line = ("slack %s failed%s: %s%s", method, where, shown or f"HTTP {status}", http)
    if caller_logs and not shared:
        log.debug(*line)
    elif warn is None:
        log.warning(*line)
    else:
        warn.warning((error, status) if shared else (error, status, channel), *line)
    if status == 429 or error in _RATE_LIMITED:
        seconds = header_seconds(retry_after)
        limited = MessageLimitExceeded if error == "message_limit_exceeded" else RateLimited
        return limited(message, retry_after=_RATE_LIMITED.get(error or "", DEFAULT_RETRY_AFTER)
                       if seconds is None else seconds, **kw)
    if error == "update_failed":
        return UpdateFailed(message, **kw)
    for codes, kind in ((_NOT_FOUND, NotFound), (_FORBIDDEN, Forbidden), (_TOO_LONG, MessageTooLong),
                        (_NO_EDIT, EditUnsupported), (_TRANSIENT, NetworkError)):
        if error in codes:
            return kind(message, **kw)
    if status is None or status >= 500 or foreign:
        return NetworkError(message, **kw)
    return BadRequest(message, **kw)


def error_code(exc: SlackApiError) -> str | None:
    """Slack's error code in ``exc``'s answer, None when it holds none. Its ``response`` is not always
    a `SlackResponse` of a JSON object: for a body labelled ``application/json`` that is no JSON (a
    proxy's 502 page, a body cut short) slack-sdk hands over aiohttp's response itself, and a text body
    is kept as text; reading ``response.get("error")`` of those crashed the translation of the error
    (AttributeError), which left the adapter as no `DeliveryError` at all."""
    data = getattr(exc.response, "data", None)
    code = data.get("error") if isinstance(data, dict) else None
    return code if isinstance(code, str) else None


def translate_exception(exc: Exception, method: str, channel: str | None,
                        warn: RepeatedWarnings | None = None, *, caller_logs: bool = False) -> DeliveryError:
    """`translate` for an exception of slack-sdk's or aiohttp's."""
    kw: dict[str, Any] = {"warn": warn, "caller_logs": caller_logs}
    if isinstance(exc, SlackApiError):
        resp = exc.response
        headers = getattr(resp, "headers", None) or {}
        retry_after = headers.get("Retry-After") or headers.get("retry-after")
        data = getattr(resp, "data", None)
        needed = data.get("needed") if isinstance(data, dict) else None
        # A SlackResponse's status_code; aiohttp's response (a body no JSON, `error_code`) has a status.
        status = getattr(resp, "status_code", None) or getattr(resp, "status", None)
        status = status if isinstance(status, int) else None
        code = error_code(exc)
        return translate(method, channel, status=status, error=code, retry_after=retry_after,
                         needed=needed if isinstance(needed, str) else None,
                         foreign=code is None and status is not None and 200 <= status < 300, **kw)
    if isinstance(exc, (aiohttp.ClientError, TimeoutError, OSError)):
        # Named by type and what it said (`_said`), or a proxy's refusal by its status and reason: aiohttp's text
        # of a refusal quotes the proxy's address with its password (`proxy_refusal`).
        refusal = proxy_refusal(exc)
        return translate(method, channel, status=None, error=refusal or type(exc).__name__, retry_after=None,
                         detail=None if refusal else _said(exc), **kw)
    return translate(method, channel, status=400, error=str(exc) or type(exc).__name__, retry_after=None, **kw)


def _said(exc: BaseException) -> str | None:
    """What a connection that failed says beside its type, as Telegram's and Discord's start lines show it: the
    host and port not reached and why (``Cannot connect to host slack.com:443 ssl:default [Name or service not
    known]``), or the system's reason (``[Errno 104] Connection reset by peer``). Only an `OSError`'s, a URL in it
    by its origin; not a timeout's (aiohttp's quotes the URL, which may hold ``api_base``'s user info), nor a refused
    tunnel's, which quotes the proxy's address with its password (`proxy_refusal`, said instead). A proxy that
    cannot be reached is named as the model server's check names it (`gateway.preflight`), without its address."""
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        inner = exc.os_error
        why = ("connection refused" if isinstance(inner, ConnectionRefusedError)
               else "unknown host" if isinstance(inner, socket.gaierror) else type(inner).__name__)
        return f"the proxy $https_proxy or $http_proxy names cannot be reached: {why}"
    if not isinstance(exc, OSError) or isinstance(exc, TimeoutError):
        return None
    # Some do quote a URL: aiohttp's `ClientOSError` of a body it could not write ("Can not write request body for
    # <url>"), whose path is the credential of an upload URL or a command's response_url. Its origin says enough.
    return _URL.sub(_origin, str(exc)) or None


def _origin(found: re.Match[str]) -> str:
    try:
        return str(URL(found.group()).origin())
    except ValueError:
        return "(a URL)"
