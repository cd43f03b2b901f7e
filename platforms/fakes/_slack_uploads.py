"""Files a bot uploads to the fake Slack, the three steps slack-sdk's ``files_upload_v2`` takes:

1. ``files.getUploadURLExternal`` (``filename``, ``length``) answers a ``file_id`` and an
   ``upload_url``; a length over Slack's 1 GB is ``file_too_large``.
2. ``POST <upload_url>`` with the bytes as the body (no token: the URL is the credential)
   answers 200 ``OK - <bytes>``. ``fail_next("upload", status=...)`` fails it; ``hold("upload")``
   neither reads nor answers it until released (a stalled upload), and `upload_pace` reads it slowly.
3. ``files.completeUploadExternal`` (``files`` as JSON ``[{"id", "title"}]``, ``channel_id``,
   ``thread_ts``, ``initial_comment``) shares the uploaded files in the channel (thread) as
   one message from the bot, ``initial_comment`` its text, and answers ``files``; a file never
   uploaded is ``file_not_found``.

A shared file is kept in ``files`` like one a user shared, so ``files.info`` and its private
URL serve it, ``files.info`` with where it was shared (``shares``, ``channels``, ``groups``, ``ims``);
``uploaded[file_id]`` is how many times step 2 received it. Completing an upload once more is
``file_not_found``, as is ``files.info`` of one not completed yet.
"""

from __future__ import annotations

import asyncio
import json
import mimetypes
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from platforms.fakes._slack_files import SharedFile
from platforms.fakes._slack_types import Call

MAX_UPLOAD = 1024**3
UPLOAD_CHUNK = 64 * 1024


@dataclass
class _Pending:
    name: str
    length: int
    data: bytes | None = None


class SlackUploads:
    """The upload half of `FakeSlack`, which holds the state and mixes this in."""

    pending_uploads: dict[str, _Pending]
    uploaded: dict[str, int]
    upload_pace = 0.0
    """Seconds the upload URL waits after each `UPLOAD_CHUNK` bytes it reads: a slow uplink (0: no wait)."""

    def _get_upload_url(self, p: dict[str, Any]) -> dict[str, Any]:
        try:
            name, length = str(p["filename"]), int(p["length"])
        except (KeyError, ValueError):
            return {"ok": False, "error": "invalid_arguments"}
        if length > MAX_UPLOAD:
            return {"ok": False, "error": "file_too_large"}
        file_id = f"F{next(self._file_ids):08d}"  # type: ignore[attr-defined]
        self.pending_uploads[file_id] = _Pending(name, length)
        url = f"{self.base_url}/upload/v1/{file_id}"  # type: ignore[attr-defined]
        return {"ok": True, "file_id": file_id, "upload_url": url}

    async def _upload(self, request: web.Request) -> web.Response:
        file_id = request.match_info["id"]
        held = self._holds.get("upload")  # type: ignore[attr-defined]
        if held is not None:
            await held.wait()
        try:
            data = await self._read_upload(request)
        except ConnectionResetError:  # the bot gave up meanwhile
            return web.Response(status=400, text="body cut short")  # to no one
        self.calls.append(Call("upload", {"id": file_id, "bytes": len(data)}, None))  # type: ignore[attr-defined]
        self._bump()  # type: ignore[attr-defined]
        failure = self._next_failure("upload")  # type: ignore[attr-defined]
        if failure is not None:
            return web.Response(status=failure.status if failure.status != 200 else 500, text=failure.error)
        pending = self.pending_uploads.get(file_id)
        if pending is None:
            return web.Response(status=404, text="Not Found")
        pending.data = data
        self.uploaded[file_id] = self.uploaded.get(file_id, 0) + 1
        return web.Response(text=f"OK - {len(data)}")

    async def _read_upload(self, request: web.Request) -> bytes:
        if not self.upload_pace:
            return await request.read()
        data = bytearray()
        while chunk := await request.content.read(UPLOAD_CHUNK):
            data += chunk
            await asyncio.sleep(self.upload_pace)
        return bytes(data)

    def _complete_upload(self, p: dict[str, Any]) -> dict[str, Any]:
        try:
            listed = json.loads(p.get("files") or "[]")
        except ValueError:
            return {"ok": False, "error": "invalid_arguments"}
        pending = [(f.get("id"), f.get("title"), self.pending_uploads.get(str(f.get("id")))) for f in listed]
        if not pending or any(upload is None or upload.data is None for _, _, upload in pending):
            return {"ok": False, "error": "file_not_found"}
        objects = []
        for file_id, title, upload in pending:
            assert upload is not None and upload.data is not None
            del self.pending_uploads[file_id]
            kind = mimetypes.guess_type(upload.name)[0] or "application/octet-stream"
            shared = SharedFile(file_id, upload.name, kind, upload.data)
            self.files[file_id] = shared  # type: ignore[attr-defined]
            shown = self.file_object(shared)  # type: ignore[attr-defined]
            bot = self.bot_user_id  # type: ignore[attr-defined]
            objects.append(shown | {"user": bot, "title": title or upload.name})
        channel = str(p.get("channel_id") or "")
        if channel:
            fields = {"user": self.bot_user_id, "bot_id": self.bot_id,  # type: ignore[attr-defined]
                      "text": p.get("initial_comment") or "", "files": objects, "upload": True}
            message = self._store(channel, p.get("thread_ts") or None, fields)  # type: ignore[attr-defined]
            self._echo({**message, "app_id": self.app_id})  # type: ignore[attr-defined]
            share = {"ts": message["ts"], **({"thread_ts": message["thread_ts"]} if "thread_ts" in message else {})}
            for o in objects:
                self.files[o["id"]].shares.setdefault(channel, []).append(share)  # type: ignore[attr-defined]
        return {"ok": True, "files": [{"id": o["id"], "title": o["title"]} for o in objects]}
