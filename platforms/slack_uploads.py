"""Files the agent sends on Slack, uploaded the way slack-sdk's ``files_upload_v2`` does:
``files.getUploadURLExternal``, the bytes to the URL it gives, then
``files.completeUploadExternal``, which shares the file in the channel (and thread) as one
message from the bot with the caption as its ``initial_comment``.

Slack takes files up to 1 GB; the adapter sends at most `UPLOAD_LIMIT`, since the SDK holds
the whole file in memory to upload it. A file share carries no message metadata, so an upload
cannot be looked up by its key like a post (`platforms.base.FindsSent`). A file that cannot be read
here is `BadRequest`, final: not an outage to retry.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import aiohttp
from slack_sdk.errors import SlackClientError, SlackRequestError
from slack_sdk.web.async_client import AsyncWebClient

from platforms.base import BadRequest, Outbound, OutboundFile, Sent, scalar_text
from platforms.formatting import blank, slack_mrkdwn
from platforms.slack_errors import translate, translate_exception

UPLOAD_LIMIT = 100 * 1000 * 1000
METHOD = "files.upload_v2"
"""How a failed upload is named in its error (the SDK's method, which makes the three calls)."""
_STATUS = re.compile(r"\(status: (\d{3})")


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
    try:
        return Sent(await upload(client, message.chat_id, message.thread_id, file.name, data, comment))
    except SlackRequestError as exc:  # the upload URL refused the bytes
        status = upload_status(str(exc))
        # The status in the words: the outbox's line, the only one said of a refusal, names it.
        error = "upload failed" if status is None else f"upload failed (HTTP {status})"
        raise translate(METHOD, message.chat_id, status=status, error=error, retry_after=None,
                        caller_logs=True) from exc
    except (SlackClientError, aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise translate_exception(exc, METHOD, message.chat_id, caller_logs=True) from exc


async def upload(client: AsyncWebClient, channel: str, thread_ts: str | None, name: str, data: bytes,
                 comment: str | None) -> str:
    """Share ``data`` as the file ``name`` in ``channel`` (the thread ``thread_ts``) with ``comment``;
    returns the file's id. Raises what the SDK raises."""
    resp = await client.files_upload_v2(channel=channel, thread_ts=thread_ts, file=data, filename=name,
                                        title=name, initial_comment=comment)
    return str(resp["file"]["id"])


def upload_status(message: str) -> int | None:
    """The HTTP status of a failed upload step, as slack-sdk's SlackRequestError words it."""
    found = _STATUS.search(message)
    return int(found.group(1)) if found else None
