"""The files Slack users share: a message's ``files`` as `Attachment`s, and fetching them.

A ``file_share`` message lists its files, and a message forwarded with another lists the files of
the one forwarded (`listed_files`); each becomes an attachment: ``image`` for the picture formats a model can
read, ``voice`` for a recorded audio clip (``subtype: slack_audio``), else ``document``.
The ``ref`` is the Slack file id, after `EXTERNAL` for a link to a file kept outside Slack (Google Drive, Dropbox:
``mode: external``), which has no copy on Slack to download: its download is refused (`KeptElsewhere`) without a call,
so that the user is told, as of any file the model did not get, rather than the file dropped unseen. A deleted one
(``mode: tombstone``) is no file at all and is left out. In a Slack Connect channel the message lists a file by
its id alone (``file_access: check_file_info``); ``files.info`` describes it first
(`described`), or an image would be a nameless document and a clip never transcribed.
Fetching asks ``files.info`` for the file's current
private URL and size, then GETs ``url_private_download`` with the bot token (scope
``files:read``), streamed and stopped past the cap, given time by the file's size but no
more than `STALLED` seconds without a byte. Without that scope Slack redirects
to its sign-in page instead of sending the file; that is reported as `Forbidden`, naming
the scope (`files.info` refuses first, ``missing_scope``, which names it too). A file ``files.info`` says is
external is refused too, never fetched: its ``url_private`` is the other service's, which the bot token is not for.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from platforms import download_time, unsigned_bodies
from platforms.base import (
    Attachment,
    AttachmentTooLarge,
    BadRequest,
    DeliveryError,
    Forbidden,
    KeptElsewhere,
    NetworkError,
    NotFound,
)

log = logging.getLogger("platforms.slack")

IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
EXTERNAL = "external:"
"""Before the file id in the ``ref`` of a file kept outside Slack."""
CHUNK = 64 * 1024
# Names of this module's own (`platforms.download_time` says why these): a test shortens one platform's.
TIMEOUT, STALLED = download_time.TIMEOUT, download_time.STALLED
DESCRIBE_TIMEOUT = 1.5
"""How long after its request came (`platforms.unsigned_bodies.arrived`) a message waits for ``files.info``
before it is handed over: Slack wants its ack within 3 s, and the gateway acks by 2 (`platforms.slack_delivery`)."""


async def described(files: list[Any], info: Callable[[str], Awaitable[dict[str, Any]]]) -> list[Any]:
    """``files`` (a message's) with each that Slack Connect lists by id alone (``file_access:
    check_file_info``) replaced by what ``files.info`` says of it, within `DESCRIBE_TIMEOUT` of the
    request's arrival (of now, for a message read back); one that cannot be described stays as listed
    (its download then fails, and the user is told), with one warning naming Slack's refusal (``info``
    logs a channel's own refusal at DEBUG only)."""
    # Counted from the arrival, as the ack is: a request that queued for its signature check has spent
    # part of the time already, and counted from here the ack could reach Slack's 3 s.
    came = unsigned_bodies.arrived()
    timeout = DESCRIBE_TIMEOUT if came is None else came + DESCRIBE_TIMEOUT - asyncio.get_running_loop().time()

    async def describe(file: Any) -> Any:
        if not (isinstance(file, dict) and file.get("file_access") == "check_file_info" and file.get("id")):
            return file
        try:
            found = (await asyncio.wait_for(info(str(file["id"])), max(0.0, timeout))).get("file")
        except (DeliveryError, TimeoutError) as exc:
            log.warning("slack: file %s could not be described: %s", file["id"],
                        f"{type(exc).__name__}: {exc}" if isinstance(exc, DeliveryError) else type(exc).__name__)
            return file
        return found if isinstance(found, dict) and found.get("id") else file

    return list(await asyncio.gather(*(describe(f) for f in files)))


def listed_files(event: dict[str, Any]) -> list[Any]:
    """``event``'s files: its own, then those of each message forwarded with it (``attachments`` flagged
    ``is_share`` or ``is_msg_unfurl``, as `platforms.slack_text.with_forwarded` reads them), which Slack lists
    under the forwarded message and never in ``files``. A file listed twice (forwarded with a message that
    shares it too) is kept once."""
    lists = [event.get("files")]
    for item in event.get("attachments") or ():
        if isinstance(item, dict) and (item.get("is_share") or item.get("is_msg_unfurl")):
            lists.append(item.get("files"))
    found: dict[object, Any] = {}
    for files in lists:
        for file in files if isinstance(files, list) else ():
            found.setdefault(file.get("id") if isinstance(file, dict) else id(file), file)
    return list(found.values())


def attachments_of(event: dict[str, Any]) -> tuple[Attachment, ...]:
    """``event``'s files (`described` first, where it may list Slack Connect files)."""
    found = []
    for file in event.get("files") or ():
        if not isinstance(file, dict) or not file.get("id") or file.get("mode") == "tombstone":
            continue
        mime = file.get("mimetype") or None
        name = str(file.get("name") or file.get("title") or file["id"])
        if _external(file):
            found.append(Attachment("document", name, mime, None, f"{EXTERNAL}{file['id']}"))
            continue
        if file.get("subtype") == "slack_audio":
            kind = "voice"
        else:
            kind = "image" if mime in IMAGE_TYPES else "document"
        size = file.get("size")
        found.append(Attachment(kind, name, mime, size if isinstance(size, int) else None, str(file["id"])))
    return tuple(found)


def _external(file: dict[str, Any]) -> bool:
    return bool(file.get("is_external")) or file.get("mode") == "external"


def _kept_outside(attachment: Attachment) -> KeptElsewhere:
    return KeptElsewhere(f"{attachment.name} is a link to a file kept outside Slack, with no copy on Slack to download",
                    method="files.info")


async def download(info: Callable[[str], Awaitable[dict[str, Any]]], session: aiohttp.ClientSession, token: str,
                   attachment: Attachment, max_bytes: int) -> bytes:
    """The file's bytes; ``info(file_id)`` calls ``files.info`` with the adapter's error translation.
    Raises `AttachmentTooLarge` or another `DeliveryError`; `KeptElsewhere` for a file kept outside Slack."""
    if attachment.ref.startswith(EXTERNAL):
        raise _kept_outside(attachment)
    if attachment.size is not None and attachment.size > max_bytes:
        raise _too_large(attachment, attachment.size, max_bytes)
    file = (await info(attachment.ref)).get("file") or {}
    if _external(file):
        raise _kept_outside(attachment)
    size = file.get("size")
    if isinstance(size, int) and size > max_bytes:
        raise _too_large(attachment, size, max_bytes)
    url = file.get("url_private_download") or file.get("url_private")
    if not url:
        raise NotFound(f"{attachment.name} has no downloadable copy on Slack", method="files.info")
    received = bytearray()
    try:
        timeout = _timeout(size if isinstance(size, int) else attachment.size or max_bytes)
        async with session.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout) as resp:
            if resp.status == 404:
                raise NotFound(f"{attachment.name} is gone from Slack", method="url_private")
            if resp.status >= 400:
                kind = NetworkError if resp.status >= 500 or resp.status == 429 else BadRequest
                raise kind(f"downloading {attachment.name} failed: HTTP {resp.status}", method="url_private")
            if _sign_in_page(resp, file.get("mimetype") or attachment.mime_type):
                raise Forbidden("Slack sent its sign-in page instead of the file: give the app the files:read "
                                "scope", method="url_private")
            async for chunk in resp.content.iter_chunked(CHUNK):
                received += chunk
                if len(received) > max_bytes:
                    raise _too_large(attachment, None, max_bytes)  # stop reading: nothing more is kept
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise NetworkError(f"downloading {attachment.name} failed: {type(exc).__name__}", method="url_private") \
            from None
    return bytes(received)


def _sign_in_page(resp: aiohttp.ClientResponse, mimetype: str | None) -> bool:
    """Whether Slack answered with its sign-in page rather than the file: HTML, after a redirect
    (Slack's answer to a request it does not take, a 302 to the page) or for a file that is not
    HTML itself. An HTML file someone shared comes as HTML, straight from the file's URL."""
    return resp.content_type == "text/html" and (bool(resp.history) or mimetype != "text/html")


def _too_large(attachment: Attachment, size: int | None, limit: int) -> AttachmentTooLarge:
    return AttachmentTooLarge(f"{attachment.name} is larger than {limit} bytes", size=size, limit=limit,
                              method="url_private")


def _timeout(size: int) -> aiohttp.ClientTimeout:
    return download_time.client_timeout(size, TIMEOUT, STALLED)
