"""Files the agent sends on Slack, uploaded the way slack-sdk's ``files_upload_v2`` does:
``files.getUploadURLExternal``, the bytes to the URL it gives, then
``files.completeUploadExternal``, which shares the file in the channel (and thread) as one
message from the bot with the caption as its ``initial_comment``.

Slack takes files up to 1 GB; the adapter sends at most `UPLOAD_LIMIT`, since the SDK holds
the whole file in memory to upload it. A file share carries no message metadata, so an upload
cannot be looked up by its key like a post (`platforms.base.FindsSent`).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from slack_sdk.web.async_client import AsyncWebClient

from platforms.base import OutboundFile

UPLOAD_LIMIT = 100 * 1000 * 1000
_STATUS = re.compile(r"\(status: (\d{3})")


async def upload(client: AsyncWebClient, channel: str, thread_ts: str | None, file: OutboundFile,
                 comment: str | None) -> str:
    """Share ``file`` in ``channel`` (the thread ``thread_ts``) with ``comment``; returns the file's
    id. Raises what the SDK raises."""
    data = await asyncio.to_thread(Path(file.path).read_bytes)  # the SDK would read it on the event loop
    resp = await client.files_upload_v2(channel=channel, thread_ts=thread_ts, file=data, filename=file.name,
                                        title=file.name, initial_comment=comment)
    return str(resp["file"]["id"])


def upload_status(message: str) -> int | None:
    """The HTTP status of a failed upload step, as slack-sdk's SlackRequestError words it."""
    found = _STATUS.search(message)
    return int(found.group(1)) if found else None
