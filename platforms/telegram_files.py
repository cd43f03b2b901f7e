"""The files Telegram users send: turning a message's media into `Attachment`s, and fetching them.

What becomes an attachment: a photo (the largest size Telegram offers that fits the
cap, so a big photo still arrives at a smaller resolution), a document (``image`` when
its MIME type is a picture format a model can read, else ``document``), a voice
message (``voice``), and audio files, videos and round video messages (``document``).
The ``ref`` is the ``file_id``.

Fetching is ``getFile`` (which names the file's path on Telegram's file server and its
size, and refuses files above 20 MB: "file is too big") followed by a streamed GET of
``/file/bot<token>/<path>`` through aiogram's own HTTP session, stopped as soon as
more than the cap has arrived, and given the bot's request timeout plus a second for every
`SLOWEST_DOWNLOAD` bytes of the file, but no more than `STALLED` seconds without a byte. The file
URL answering 401 or 403 (a proxy in front refusing it, a token without access) is `Forbidden`,
404 or 410 (the file is gone) `NotFound`: final, so the gateway tells
the user at once. Taken for a `NetworkError`, it was asked for again, to be refused the same way, before the
user was told. A 5xx, 408 or 429 (or a connection that fails) stays a `NetworkError`, tried again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from aiogram import Bot
from aiogram.exceptions import AiogramError
from aiogram.types import Message, PhotoSize

from platforms.base import Attachment, AttachmentTooLarge, DeliveryError, Forbidden, NetworkError, NotFound

IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
CHUNK = 64 * 1024
BOT_API_DOWNLOAD_LIMIT = 20 * 1024 * 1024
"""What Telegram's own Bot API server lets a bot download ("file is too big" above it)."""
REFUSED = {401: Forbidden, 403: Forbidden, 404: NotFound, 410: NotFound}
"""The file URL's answers no try again mends (see the module's docstring); any other stays a `NetworkError`."""
SLOWEST_DOWNLOAD = 50_000
"""Bytes a second a download is given time for, on top of the bot's request timeout (aiogram's 60 s by
default). A fixed 60 s for the whole download cut a large voice note or document off midway over a
slow link (20 MB needs about 2.8 Mbit/s to come in 60 s), and every try again was cut off the same way.
At this rate a 20 MB file has about 7 minutes more."""
STALLED = 30.0
"""Seconds a download may go without a byte (the response's first included) before it is given up, a
`NetworkError` tried again: a connection gone silent (a NAT or proxy that dropped it) waited out the whole
time given by the file's size, 8 minutes for 20 MB at each of the gateway's tries, the chat's turn held."""


def attachments_of(message: Message, max_bytes: int) -> tuple[Attachment, ...]:
    found: list[Attachment] = []
    if message.photo:
        photo = _largest_fitting(message.photo, max_bytes)
        found.append(Attachment("image", f"photo-{photo.file_unique_id}.jpg", "image/jpeg", photo.file_size,
                                photo.file_id))
    if message.document is not None:
        doc = message.document
        kind = "image" if doc.mime_type in IMAGE_TYPES else "document"
        found.append(Attachment(kind, doc.file_name or f"document-{doc.file_unique_id}", doc.mime_type,
                                doc.file_size, doc.file_id))
    if message.voice is not None:
        voice = message.voice
        found.append(Attachment("voice", f"voice-{voice.file_unique_id}.ogg", voice.mime_type or "audio/ogg",
                                voice.file_size, voice.file_id))
    for media, default in ((message.audio, "audio"), (message.video, "video")):
        if media is not None:
            name = getattr(media, "file_name", None) or f"{default}-{media.file_unique_id}"
            found.append(Attachment("document", name, media.mime_type, media.file_size, media.file_id))
    if message.video_note is not None:  # a round video: always an MP4, with no name or type of its own
        note = message.video_note
        found.append(Attachment("document", f"video-note-{note.file_unique_id}.mp4", "video/mp4", note.file_size,
                                note.file_id))
    return tuple(found)


def _largest_fitting(sizes: list[PhotoSize], max_bytes: int) -> PhotoSize:
    fitting = [s for s in sizes if s.file_size is None or s.file_size <= max_bytes]
    return max(fitting or sizes[:1], key=lambda s: (s.width * s.height, s.file_size or 0))


async def download(bot: Bot, attachment: Attachment, max_bytes: int,
                   call: Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[Any]]) -> bytes:
    """The file's bytes; ``call(method, request)`` makes a Bot API call with the adapter's error
    translation. Raises `AttachmentTooLarge` or another `DeliveryError`."""
    if attachment.size is not None and attachment.size > max_bytes:
        raise _too_large(attachment, attachment.size, max_bytes)
    try:
        file = await call("getFile", lambda: bot.get_file(attachment.ref))
    except DeliveryError as exc:
        if "file is too big" in str(exc).lower():
            # The server's limit, not a larger cap (meant for a self-hosted server): the user is told it.
            raise _too_large(attachment, attachment.size, min(max_bytes, BOT_API_DOWNLOAD_LIMIT)) from exc
        raise
    if file.file_size is not None and file.file_size > max_bytes:
        raise _too_large(attachment, file.file_size, max_bytes)
    if not file.file_path:
        raise NetworkError("getFile named no file path; the file is not available yet", method="getFile")
    url = bot.session.api.file_url(bot.token, file.file_path)
    received = bytearray()
    size = file.file_size or attachment.size or max_bytes  # unknown: as large as it may be, the cap
    timeout = bot.session.timeout + size / SLOWEST_DOWNLOAD
    stream = bot.session.stream_content(url, timeout=timeout, chunk_size=CHUNK,  # type: ignore[arg-type]
                                        raise_for_status=True)
    try:
        async with contextlib.aclosing(stream):
            while (chunk := await _within(STALLED, anext(stream, None))) is not None:
                received += chunk
                if len(received) > max_bytes:
                    raise _too_large(attachment, None, max_bytes)  # stop reading: nothing more is kept
    except aiohttp.ClientResponseError as exc:
        # The URL holds the bot token: name the failure, never the address.
        kind = REFUSED.get(exc.status, NetworkError)
        raise kind(f"downloading {attachment.name} failed: HTTP {exc.status}", method="file") from None
    except (aiohttp.ClientError, TimeoutError, OSError, AiogramError) as exc:
        raise NetworkError(f"downloading {attachment.name} failed: {type(exc).__name__}", method="file") from None
    return bytes(received)


async def _within(seconds: float, step: Awaitable[bytes | None]) -> bytes | None:
    async with asyncio.timeout(seconds):  # a TimeoutError, as the whole download's timeout is
        return await step


def _too_large(attachment: Attachment, size: int | None, limit: int) -> AttachmentTooLarge:
    return AttachmentTooLarge(f"{attachment.name} is larger than {limit} bytes", size=size, limit=limit,
                              method="getFile")
