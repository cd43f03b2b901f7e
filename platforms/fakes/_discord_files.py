"""Files in the fake Discord: what a test's users attach to a message (`Upload`), served from
attachment URLs under ``/attachments/<channel>/<id>/<filename>`` like Discord's CDN (no token),
and what the bot uploads: a message create or an interaction's follow-up sent as ``multipart/form-data`` with
the message as JSON in ``payload_json`` and each file in a part ``files[n]`` (discord.py's form), each at most
the guild's upload limit (10 MiB, 50 MB from boost tier 2, 100 MB at tier 3; 10 MiB in DMs),
else 413 with code 40005 "Request entity too large"."""

from __future__ import annotations

import base64
import email.parser
import email.policy
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

FLAG_VOICE_MESSAGE = 1 << 13
DEFAULT_UPLOAD_LIMIT = 10 * 1024 * 1024
UPLOAD_LIMITS = {2: 50 * 1024 * 1024, 3: 100 * 1024 * 1024}
"""Per file, by the guild's ``premium_tier``; other tiers and DMs get the default."""


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
        """The attachment objects of a message's files (a user's or the bot's), their bytes kept for the CDN route."""
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

    def _upload_limit(self, channel: str) -> int:
        guild = self._channel_guild.get(channel)  # type: ignore[attr-defined]
        tier = self._guilds[guild]["premium_tier"] if guild is not None else None  # type: ignore[attr-defined]
        return UPLOAD_LIMITS.get(tier, DEFAULT_UPLOAD_LIMIT)

    def boost(self, guild: str | int, tier: int) -> None:
        """Set the guild's boost level (``premium_tier``), announced with GUILD_UPDATE: tiers 2 and 3
        raise its upload limit."""
        self._ensure_guild(str(guild))["premium_tier"] = tier  # type: ignore[attr-defined]
        if self._session is not None:  # type: ignore[attr-defined]
            self._dispatch("GUILD_UPDATE", self._guild_json(str(guild)))  # type: ignore[attr-defined]

    async def _serve_attachment(self, request: web.Request) -> web.Response:
        data = self.attachment_data.get(request.match_info["attachment_id"])
        if data is None:
            return web.Response(status=404, text="Not Found")
        self.downloads.append(request.match_info["attachment_id"])
        return web.Response(body=data, content_type="application/octet-stream")


def parse_multipart(content_type: str, raw: bytes) -> tuple[dict[str, Any], list[Upload]]:
    """A message create (or follow-up) sent as multipart: its ``payload_json`` and its ``files[n]`` parts, in order."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    payload: dict[str, Any] = {}
    uploads: list[Upload] = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True) or b""
        if name == "payload_json":
            payload = json.loads(data)
        elif isinstance(name, str) and name.startswith("files["):
            uploads.append(Upload(part.get_filename() or "file", data, part.get_content_type()))
    return payload, uploads
