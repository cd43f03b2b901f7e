"""Files in the fake Telegram: what a test's users send (photos, documents, voice notes, round videos),
``getFile``, and the download route ``GET /file/bot<token>/<file_path>``.

As on Telegram, an update carries only the file's metadata (``file_id``,
``file_unique_id``, ``file_size``); ``getFile`` turns an id into a ``file_path``
(refusing files above 20 MB, "file is too big", like the real Bot API), and the
bytes come from the file URL with the bot's token in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from platforms.fakes._telegram_api import ApiError, RawAnswer

MAX_DOWNLOAD = 20 * 1024 * 1024
"""Telegram lets bots download files up to 20 MB."""
DOWNLOADS = "/file"
"""What `hold` holds for `hold_downloads`: file downloads, which no Bot API method name can be."""


@dataclass
class StoredFile:
    file_id: str
    unique_id: str
    path: str
    data: bytes


class TelegramFiles:
    """The file half of `FakeTelegram`, which holds ``files`` and mixes this in."""

    files: dict[str, StoredFile]
    _file_ids: itertools.count[int]
    _cuts: list[int]
    _held: dict[str, asyncio.Event]
    _held_download_start: int
    _faults: Any

    # -- driving it from a test ------------------------------------------------------

    def add_file(self, data: bytes, folder: str = "documents", suffix: str = "") -> dict[str, Any]:
        """Store ``data`` as a file users have sent; returns its metadata (``file_id``, ``file_unique_id``,
        ``file_size``) to put in a message."""
        n = next(self._file_ids)
        stored = StoredFile(f"FILE{n:06d}-{len(data)}", f"U{n:06d}", f"{folder}/file_{n}{suffix}", data)
        self.files[stored.file_id] = stored
        return {"file_id": stored.file_id, "file_unique_id": stored.unique_id, "file_size": len(data)}

    def push_photo(self, chat_id: int | str, data: bytes, *, caption: str | None = None,
                   thumbnail: bytes | None = None, **kw: Any) -> int:
        """A user sends a photo (``data``, the largest size; ``thumbnail`` a smaller one Telegram also
        lists), with an optional caption; returns the update id. Keywords as `message_update`."""
        sizes = [] if thumbnail is None else [{**self.add_file(thumbnail, "photos", ".jpg"), "width": 90, "height": 90}]
        sizes.append({**self.add_file(data, "photos", ".jpg"), "width": 1280, "height": 960})
        return self.push_update(self.media_update(chat_id, {"photo": sizes}, caption, **kw))

    def push_album(self, chat_id: int | str, photos: list[bytes], *, caption: str | None = None,
                   captions: list[str | None] | None = None, media_group_id: str | None = None,
                   **kw: Any) -> list[int]:
        """A user sends several photos at once: as on Telegram, one update per photo, all with the
        same ``media_group_id``, the caption on the first (``captions``: one per photo, as a user
        who captions each item sends them); returns their update ids. A ``media_group_id`` given
        continues that album: Telegram may serve an album's items over several ``getUpdates`` answers."""
        updates = self.album_updates(chat_id, photos, caption=caption, captions=captions,
                                     media_group_id=media_group_id, **kw)
        return [self.push_update(update) for update in updates]

    def album_updates(self, chat_id: int | str, photos: list[bytes], *, caption: str | None = None,
                      captions: list[str | None] | None = None, media_group_id: str | None = None,
                      **kw: Any) -> list[dict[str, Any]]:
        """Build (not queue) the updates of an album, as `push_album` (for `deliver_webhook`)."""
        group = media_group_id or f"album-{next(self._file_ids)}"
        if captions is None:
            captions = [caption, *[None] * (len(photos) - 1)]
        updates = []
        for data, item_caption in zip(photos, captions, strict=True):
            sizes = [{**self.add_file(data, "photos", ".jpg"), "width": 1280, "height": 960}]
            updates.append(self.media_update(chat_id, {"photo": sizes, "media_group_id": group}, item_caption, **kw))
        return updates

    def push_document(self, chat_id: int | str, data: bytes, file_name: str, *,
                      mime_type: str = "application/octet-stream", caption: str | None = None, **kw: Any) -> int:
        """A user sends a file as a document; returns the update id."""
        document = {**self.add_file(data, "documents"), "file_name": file_name, "mime_type": mime_type}
        return self.push_update(self.media_update(chat_id, {"document": document}, caption, **kw))

    def push_voice(self, chat_id: int | str, data: bytes, *, duration: int = 3, mime_type: str = "audio/ogg",
                   caption: str | None = None, **kw: Any) -> int:
        """A user records a voice message; returns the update id."""
        voice = {**self.add_file(data, "voice", ".oga"), "duration": duration, "mime_type": mime_type}
        return self.push_update(self.media_update(chat_id, {"voice": voice}, caption, **kw))

    def push_video_note(self, chat_id: int | str, data: bytes, *, duration: int = 5, length: int = 240,
                        **kw: Any) -> int:
        """A user records a round video message (no caption, file name or MIME type, as on Telegram);
        returns the update id."""
        note = {**self.add_file(data, "video_notes", ".mp4"), "duration": duration, "length": length}
        return self.push_update(self.media_update(chat_id, {"video_note": note}, **kw))

    def cut_next_download(self, after: int) -> None:
        """The next file download announces the whole file (``Content-Length``) but the connection
        drops after ``after`` bytes of it: a download that fails midway."""
        self._cuts.append(after)

    def fail_next_download(self, status: int, body: str = "", content_type: str = "text/html") -> None:
        """The next file download (a path that exists) is answered ``status`` with ``body`` instead of the file:
        a proxy in front refusing it (403), a file gone (404), an outage (502). Downloads queue up in order."""
        self._faults[DOWNLOADS].append(RawAnswer(status, body, content_type))

    def hold_downloads(self, after: int = 0) -> None:
        """File downloads (this one's and later ones) announce the whole file (``Content-Length``) and send
        its first ``after`` bytes, then wait for `release_downloads` to send the rest: a large file over a
        slow link. `close` releases them too."""
        self._held_download_start = after
        self.hold(DOWNLOADS)  # type: ignore[attr-defined]

    def release_downloads(self) -> None:
        """Send the rest of the held downloads; later ones come whole at once again."""
        self.release(DOWNLOADS)  # type: ignore[attr-defined]

    def media_update(self, chat_id: int | str, media: dict[str, Any], caption: str | None = None,
                     **kw: Any) -> dict[str, Any]:
        """Build (not queue) an update whose message carries ``media`` and an optional caption."""
        update = self.message_update(chat_id, caption or "", **kw)  # type: ignore[attr-defined]
        message = update["message"]
        message.pop("text")
        entities = message.pop("entities", None)
        if caption:
            message["caption"] = caption
            if entities:
                message["caption_entities"] = entities
        message.update(media)
        return update

    # -- the Bot API side ------------------------------------------------------------

    def _get_file(self, params: dict[str, Any]) -> dict[str, Any]:
        stored = self.files.get(str(params.get("file_id", "")))
        if stored is None:
            raise ApiError(400, "Bad Request: invalid file_id")
        if len(stored.data) > MAX_DOWNLOAD:
            raise ApiError(400, "Bad Request: file is too big")
        return {"file_id": stored.file_id, "file_unique_id": stored.unique_id, "file_size": len(stored.data),
                "file_path": stored.path}

    async def _download(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:  # type: ignore[attr-defined]
            return web.Response(status=401, text="Unauthorized")
        path = request.match_info["path"]
        stored = next((f for f in self.files.values() if f.path == path), None)
        if stored is None or len(stored.data) > MAX_DOWNLOAD:
            return web.json_response({"ok": False, "error_code": 404, "description": "Not Found"}, status=404)
        self.downloads.append(path)  # type: ignore[attr-defined]
        if faults := self._faults.get(DOWNLOADS):
            return faults.popleft().response()
        held = self._held.get(DOWNLOADS)
        if not self._cuts and held is None:
            return web.Response(body=stored.data, content_type="application/octet-stream")
        response = web.StreamResponse(headers={"Content-Type": "application/octet-stream",
                                               "Content-Length": str(len(stored.data))})
        await response.prepare(request)
        if not self._cuts and held is not None:
            start = self._held_download_start
            with contextlib.suppress(ConnectionError):  # the bot gave up waiting meanwhile
                await response.write(stored.data[:start])
                await held.wait()
                await response.write(stored.data[start:])
            return response
        await response.write(stored.data[:self._cuts.pop(0)])
        assert request.transport is not None
        request.transport.abort()
        return response
