"""Files the agent sends on Slack, uploaded in the three steps slack-sdk's ``files_upload_v2``
takes: ``files.getUploadURLExternal``, the bytes to the URL it gives, then
``files.completeUploadExternal``, which shares the file in the channel (and thread) as one
message from the bot with the caption as its ``initial_comment``.

Slack takes files up to 1 GB; the adapter sends at most `UPLOAD_LIMIT`, since it holds the
whole file in memory to upload it. A file share carries no message metadata, so an upload
cannot be looked up by its key like a post (`platforms.base.FindsSent`). What this process knows
stands in for that: once Slack took a part's bytes, the part's next try (the outbox's, after a 5xx,
a 429 or a lost answer of the last step) uploads nothing again: it asks ``files.info`` whether that
file was shared, and completes it only if not. Shared twice, the chat showed the file twice. Slack
shares a completed file a moment later, not at once, so a try right after an answer lost the same
moment may still share it twice; so may a process killed mid-upload, which knows nothing of it. A
file that cannot be read here is `BadRequest`, final: not an outage to retry.

The bytes are given time by their size (`upload_timeout`), not by the adapter's HTTP session: slack-sdk's
``timeout`` does not reach a session it is given, so aiohttp's 300 s for any request bounded every upload,
and 100 MB over an uplink slower than 2.7 Mbit/s was cut off at every try, while one gone silent hung for
the whole 300 s. The small Web API calls around them keep the session's bounds.
"""

from __future__ import annotations

import asyncio
import logging
import re
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError, SlackRequestError
from slack_sdk.web.async_client import AsyncWebClient

from platforms.base import (
    BadRequest,
    NetworkError,
    Outbound,
    OutboundFile,
    RateLimited,
    Sent,
    Unauthorized,
    scalar_text,
)
from platforms.formatting import blank, slack_mrkdwn
from platforms.recent import remember
from platforms.slack_errors import error_code, translate, translate_exception

log = logging.getLogger("platforms.slack")

UPLOAD_LIMIT = 100 * 1000 * 1000
TIMEOUT = 30.0
"""Seconds any upload's bytes are given (slack-sdk's ``timeout`` for a call), on top of `SLOWEST_UPLOAD`'s."""
SLOWEST_UPLOAD = 50_000
"""Bytes a second an upload is given time for, as a download is (`platforms.download_time`): 100 MB has
about 34 minutes, at 400 kbit/s."""
STALLED = 30.0
"""Seconds an upload may go without aiohttp taking a chunk of its bytes (or, once it took the last, without
the answer) before it is given up, a `NetworkError` tried again."""
SEND_BUFFER = 4 * 1024 * 1024
"""Bytes the system may still hold to send once aiohttp took the last (Linux's largest send buffer by
default): the answer waits `STALLED` seconds more than their time at `SLOWEST_UPLOAD`, so that a slow
uplink still sending them is not taken for a stall."""
CHUNK = 64 * 1024
METHOD = "files.upload_v2"
"""How a failed upload is named in its error: slack-sdk's name for the three calls this module makes."""
REMEMBERED = 1000
"""Uploads whose completion is unsettled kept at most per client: far more than the files queued at once."""
_STATUS = re.compile(r"\(status: (\d{3})")
_UNSETTLED = (NetworkError, RateLimited, Unauthorized)
"""A completion that may have gone through, or that Slack will take later: its upload is kept for the next try."""

_uploaded: weakref.WeakKeyDictionary[AsyncWebClient, OrderedDict[str, str]] = weakref.WeakKeyDictionary()
"""Per client (an adapter's run), by part key: the file whose bytes Slack took and whose completion is unsettled."""


async def share(client: AsyncWebClient, message: Outbound, file: OutboundFile) -> Sent:
    """`upload` ``file`` to the message's channel or thread, the caption rendered as mrkdwn like a
    post; the message id is the file's id. Errors are translated (`platforms.slack_errors`)."""
    comment = slack_mrkdwn.render(blank.caption(scalar_text(message.text))) or None
    try:
        data = await asyncio.to_thread(Path(file.path).read_bytes)  # the SDK would read it on the event loop
    except OSError as exc:
        # Not Slack's failure (which an OSError below would be: a connection reset): a copy gone or unreadable
        # would fail alike at every retry, as the gateway holds a copy that has gone to be final.
        raise BadRequest(f"cannot read {file.name} to upload it: {type(exc).__name__}: {exc.strerror or exc}",
                         method=METHOD, chat_id=message.chat_id, platform="slack") from exc
    uploads = _uploaded.setdefault(client, OrderedDict())
    key = message.idempotency_key
    try:
        return Sent(await upload(client, message.chat_id, message.thread_id, file.name, data, comment, uploads,
                                 key))
    except SlackRequestError as exc:  # the upload URL refused the bytes
        status = upload_status(str(exc))
        # The status in the words: the outbox's line, the only one said of a refusal, names it.
        error = "upload failed" if status is None else f"upload failed (HTTP {status})"
        raise translate(METHOD, message.chat_id, status=status, error=error, retry_after=None,
                        caller_logs=True) from exc
    except (SlackClientError, aiohttp.ClientError, TimeoutError, OSError) as exc:
        translated = translate_exception(exc, METHOD, message.chat_id, caller_logs=True)
        if key is not None and not isinstance(translated, _UNSETTLED):
            uploads.pop(key, None)  # refused: nothing was shared, and a try again (the operator's) starts over
        raise translated from exc


async def upload(client: AsyncWebClient, channel: str, thread_ts: str | None, name: str, data: bytes,
                 comment: str | None, uploads: OrderedDict[str, str], key: str | None) -> str:
    """Share ``data`` as the file ``name`` in ``channel`` (the thread ``thread_ts``) with ``comment``;
    returns the file's id. ``uploads[key]``: the file whose bytes Slack took at an earlier try of the part
    ``key``, its completion unsettled (kept there until it is settled): that file is shared, unless it
    was already, rather than the bytes uploaded again. Raises what the SDK raises."""
    taken = uploads.get(key) if key is not None else None
    if taken is not None and await _shared(client, taken, channel):
        # By id, not name: the name is the model's word, often a user's, and the log is the operator's.
        log.info("slack: channel %s: file %s had been shared already; not shared again", channel, taken)
        uploads.pop(key, None)
        return taken
    file_id = taken or await _put(client, name, data)
    if key is not None:
        remember(uploads, key, file_id, REMEMBERED)
    try:
        await client.files_completeUploadExternal(files=[{"id": file_id, "title": name}], channel_id=channel,
                                                  thread_ts=thread_ts, initial_comment=comment)
    except SlackApiError as exc:
        if taken is None or error_code(exc) != "file_not_found":
            raise
        uploads.pop(key, None)  # the upload Slack took has expired, never shared: made anew
        return await upload(client, channel, thread_ts, name, data, comment, uploads, key)
    uploads.pop(key, None)
    return file_id


async def _put(client: AsyncWebClient, name: str, data: bytes) -> str:
    """The first two steps: the upload URL, and the bytes to it; returns the file's id."""
    url = await client.files_getUploadURLExternal(filename=name, length=len(data))
    # slack-sdk's own second step (`files_upload_v2` keeps the file's id to itself), but timed by the size.
    status = await _post(client, str(url["upload_url"]), data)
    if status != 200:  # worded as slack-sdk's own, which `upload_status` reads
        raise SlackRequestError(f"Failed to upload a file (status: {status}, filename: {name})")
    return str(url["file_id"])


async def _post(client: AsyncWebClient, url: str, data: bytes) -> int:
    """POST ``data`` to the upload URL ``url`` through the client's session, within `upload_timeout` and
    `STALLED`; the answer's status. Raises aiohttp's errors, `TimeoutError` for either bound."""
    session = client.session
    if session is None or session.closed:  # the adapter closed meanwhile: slack-sdk would open another
        raise aiohttp.ClientConnectionError("the adapter's HTTP session is closed")
    loop = asyncio.get_running_loop()
    view, sending = memoryview(data), True

    async def chunks() -> AsyncIterator[memoryview]:
        # Asked for each next chunk by aiohttp's writing task once it took the one before, which is the
        # progress aiohttp's read timeout cannot see: it starts once the whole body is sent.
        for start in range(0, len(data), CHUNK):
            if sending:  # that task may outlive the answer
                stall.reschedule(loop.time() + STALLED)
            yield view[start:start + CHUNK]
        if sending:
            stall.reschedule(loop.time() + STALLED + min(len(data), SEND_BUFFER) / SLOWEST_UPLOAD)

    async with asyncio.timeout(loop.time() + STALLED) as stall:
        try:
            async with session.post(url, data=chunks(), headers={"Content-Length": str(len(data))},
                                    timeout=upload_timeout(len(data)), proxy=client.proxy, ssl=client.ssl) as resp:
                await resp.read()
                return resp.status
        finally:
            sending = False


def upload_timeout(size: int) -> aiohttp.ClientTimeout:
    """The bound of uploading ``size`` bytes, the answer included."""
    return aiohttp.ClientTimeout(total=TIMEOUT + size / SLOWEST_UPLOAD)


async def _shared(client: AsyncWebClient, file_id: str, channel: str) -> bool:
    """Whether Slack shared the file ``file_id`` anywhere (uploaded for one share only: the part's). False
    when it is not complete (``file_not_found``), or when Slack will not say (no ``files:read``: logged).
    Raises what the SDK raises otherwise (a 5xx, an answer lost): the part is tried again later, asking again."""
    try:
        file: Any = (await client.files_info(file=file_id)).get("file") or {}
    except SlackApiError as exc:
        code = error_code(exc)
        if code == "missing_scope":
            log.warning("slack: channel %s: cannot tell whether file %s was shared already (files.info: "
                        "missing_scope, the app needs files:read); sharing it", channel, file_id)
            return False
        if code != "file_not_found":
            raise
        return False
    return bool(file.get("shares") or any(file.get(k) for k in ("channels", "groups", "ims")))


def upload_status(message: str) -> int | None:
    """The HTTP status of a failed upload step, as slack-sdk's SlackRequestError words it."""
    found = _STATUS.search(message)
    return int(found.group(1)) if found else None
