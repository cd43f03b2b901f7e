"""The files Discord users attach: a message's attachments as `Attachment`s, and fetching them.

Each attachment becomes ``voice`` when Discord marks it a voice message, ``image`` for
the picture formats a model can read, else ``document``. The ``ref`` is its URL on
Discord's CDN (signed by Discord, no token needed, valid for about a day), which is
fetched with a plain GET (through the proxy the environment names for it: `platforms.proxies`), streamed and
stopped past the cap, given time by the file's size but no more than `STALLED` seconds without a byte.
"""

from __future__ import annotations

from typing import Any

import aiohttp

from platforms import download_time
from platforms.base import Attachment, AttachmentTooLarge, BadRequest, NetworkError, NotFound
from platforms.proxies import proxy_for

IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
CHUNK = 64 * 1024
# Names of this module's own (`platforms.download_time` says why these): a test shortens one platform's.
TIMEOUT, STALLED = download_time.TIMEOUT, download_time.STALLED


def attachments_of(attachments: list[Any]) -> tuple[Attachment, ...]:
    """``attachments``: a message's `discord.Attachment` objects."""
    found = []
    for item in attachments:
        mime = (item.content_type or "").split(";")[0].strip() or None
        if item.is_voice_message():
            kind = "voice"
        else:
            kind = "image" if mime in IMAGE_TYPES else "document"
        found.append(Attachment(kind, item.filename, mime, item.size, item.url))
    return tuple(found)


async def download(attachment: Attachment, max_bytes: int) -> bytes:
    """The file's bytes from its CDN URL. Raises `AttachmentTooLarge` or another `DeliveryError`."""
    if attachment.size is not None and attachment.size > max_bytes:
        raise _too_large(attachment, attachment.size, max_bytes)
    received = bytearray()
    try:
        timeout = _timeout(attachment.size or max_bytes)  # unknown: as large as it may be, the cap
        async with (aiohttp.ClientSession(timeout=timeout, proxy=proxy_for(attachment.ref)) as session,
                    session.get(attachment.ref) as resp):
            if resp.status in (403, 404):  # an expired or deleted CDN link
                raise NotFound(f"{attachment.name} is no longer on Discord's CDN (HTTP {resp.status})",
                               method="GET attachment")
            if resp.status >= 400:
                kind = NetworkError if resp.status >= 500 or resp.status == 429 else BadRequest
                raise kind(f"downloading {attachment.name} failed: HTTP {resp.status}", method="GET attachment")
            if resp.content_length is not None and resp.content_length > max_bytes:
                raise _too_large(attachment, resp.content_length, max_bytes)
            async for chunk in resp.content.iter_chunked(CHUNK):
                received += chunk
                if len(received) > max_bytes:
                    raise _too_large(attachment, None, max_bytes)  # stop reading: nothing more is kept
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise NetworkError(f"downloading {attachment.name} failed: {type(exc).__name__}",
                           method="GET attachment") from None
    return bytes(received)


def _too_large(attachment: Attachment, size: int | None, limit: int) -> AttachmentTooLarge:
    return AttachmentTooLarge(f"{attachment.name} is larger than {limit} bytes", size=size, limit=limit,
                              method="GET attachment")


def _timeout(size: int) -> aiohttp.ClientTimeout:
    return download_time.client_timeout(size, TIMEOUT, STALLED)
