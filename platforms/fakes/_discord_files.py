"""Files in the fake Discord: what a test's users attach to a message (`Upload`), served from
attachment URLs under ``/attachments/<channel>/<id>/<filename>`` like Discord's CDN (no token)."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

FLAG_VOICE_MESSAGE = 1 << 13


@dataclass(frozen=True, slots=True)
class Upload:
    """A file a user attaches; ``voice`` makes it a recorded voice message."""

    filename: str
    data: bytes
    content_type: str = "application/octet-stream"
    voice: bool = False


class DiscordFiles:
    """The file half of `FakeDiscord`, which holds ``attachment_data`` and mixes this in."""

    attachment_data: dict[str, bytes]
    downloads: list[str]

    def _attachments(self, channel: str, uploads: Sequence[Upload]) -> list[dict[str, Any]]:
        """The attachment objects of a user's message, their bytes kept for the CDN route."""
        out = []
        for upload in uploads:
            attachment_id = self.new_id()  # type: ignore[attr-defined]
            self.attachment_data[attachment_id] = upload.data
            sig = hashlib.sha256(upload.data).hexdigest()[:16]
            url = f"{self.url}/attachments/{channel}/{attachment_id}/{upload.filename}?ex=0&hm={sig}"  # type: ignore[attr-defined]
            item: dict[str, Any] = {
                "id": attachment_id, "filename": upload.filename, "size": len(upload.data), "url": url,
                "proxy_url": url, "content_type": upload.content_type,
            }
            if upload.voice:
                item.update(duration_secs=3.0, waveform=base64.b64encode(bytes(32)).decode(),
                            flags=0)
            out.append(item)
        return out

    async def _serve_attachment(self, request: web.Request) -> web.Response:
        data = self.attachment_data.get(request.match_info["attachment_id"])
        if data is None:
            return web.Response(status=404, text="Not Found")
        self.downloads.append(request.match_info["attachment_id"])
        return web.Response(body=data, content_type="application/octet-stream")
