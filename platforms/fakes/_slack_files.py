"""Files in the fake Slack: what a test's users share (`push_file`), ``files.info``, and the
private download URL ``GET /files-pri/<team>-<id>/<name>``.

As on Slack, a shared file reaches the bot as a ``file_share`` message listing the file
(id, name, mimetype, size, ``url_private``...), never its bytes. The private URL serves
them only with ``Authorization: Bearer <bot token>`` of an app with the ``files:read`` scope;
without either Slack redirects (302) to its sign-in page, and so does this fake (an HTML page with
status 200 at the end).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class SharedFile:
    id: str
    name: str
    mimetype: str
    data: bytes
    subtype: str | None = None
    shares: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Where the bot's upload was shared (``files.completeUploadExternal``): by channel, the messages."""


class SlackFiles:
    """The file half of `FakeSlack`, which holds ``files`` and mixes this in."""

    files: dict[str, SharedFile]
    downloads: list[str]
    files_read_scope: bool
    """False: the app lacks ``files:read``, so ``files.info`` answers ``missing_scope`` and the private
    URLs redirect to the sign-in page."""
    _file_ids: itertools.count[int]

    async def push_file(self, channel: str, user: str, data: bytes, name: str, *, mimetype: str = "application/octet-stream",
                        text: str = "", thread_ts: str | None = None, channel_type: str | None = None,
                        subtype: str | None = None, mention: bool = False, connect: bool = False) -> dict[str, Any]:
        """``user`` shares a file (with an optional message ``text``) in ``channel``; a ``D...`` channel
        is a DM. ``subtype="slack_audio"`` makes it a recorded audio clip, ``mention`` prepends the bot's
        mention. ``connect``: shared in a Slack Connect channel, where the event names the file by its id
        alone (``file_access: check_file_info``) and only ``files.info`` tells the rest. Returns the event
        callback."""
        shared = SharedFile(f"F{next(self._file_ids):08d}", name, mimetype, data, subtype)
        self.files[shared.id] = shared
        if mention:
            text = f"<@{self.bot_user_id}> {text}".strip()  # type: ignore[attr-defined]
        message = self._store(channel, thread_ts, {  # type: ignore[attr-defined]
            "user": user, "text": text, "subtype": "file_share", "files": [_check_file_info(shared) if connect else self.file_object(shared)], "upload": True,
        })
        kind = channel_type or ("im" if channel.startswith("D") else "channel")
        event = {**message, "channel_type": kind, "team": self.team_id,  # type: ignore[attr-defined]
                 "event_ts": message["ts"]}
        return await self.push_event(event)  # type: ignore[attr-defined]

    def file_object(self, shared: SharedFile) -> dict[str, Any]:
        url = f"{self.base_url}/files-pri/{self.team_id}-{shared.id}/{shared.name}"  # type: ignore[attr-defined]
        file = {
            "id": shared.id, "name": shared.name, "title": shared.name, "mimetype": shared.mimetype,
            "filetype": shared.name.rsplit(".", 1)[-1] if "." in shared.name else "binary", "size": len(shared.data),
            "mode": "hosted", "is_external": False, "url_private": url, "url_private_download": f"{url}?download=1",
            "user": "U0HUMAN",
        }
        if shared.subtype:
            file["subtype"] = shared.subtype
        if shared.shares:  # as files.info tells where a file is shared once Slack has shared it
            public = {c: s for c, s in shared.shares.items() if c.startswith("C")}
            private = {c: s for c, s in shared.shares.items() if not c.startswith("C")}
            file["shares"] = {kind: found for kind, found in (("public", public), ("private", private)) if found}
            file.update(channels=list(public), groups=[c for c in private if c.startswith("G")],
                        ims=[c for c in private if c.startswith("D")])
        return file

    def _files_info(self, params: dict[str, Any]) -> dict[str, Any]:
        if not self.files_read_scope:
            return {"ok": False, "error": "missing_scope", "needed": "files:read", "provided": "chat:write"}
        shared = self.files.get(str(params.get("file", "")))
        if shared is None:
            return {"ok": False, "error": "file_not_found"}
        return {"ok": True, "file": self.file_object(shared)}

    async def _file_download(self, request: web.Request) -> web.StreamResponse:
        shared = self.files.get(request.match_info["id"])
        authorized = request.headers.get("Authorization") == f"Bearer {self.bot_token}"  # type: ignore[attr-defined]
        if not (authorized and self.files_read_scope):
            raise web.HTTPFound("/signin")  # what Slack does for a request it does not take
        if shared is None:
            return web.Response(status=404, text="file not found")
        self.downloads.append(shared.id)
        return web.Response(body=shared.data, content_type=shared.mimetype)

    async def _signin(self, request: web.Request) -> web.Response:
        return web.Response(text="<html><body>Sign in to Slack</body></html>", content_type="text/html")


def _check_file_info(shared: SharedFile) -> dict[str, Any]:
    """How a Slack Connect channel's message event lists a file: no name, type, size or URL."""
    return {"id": shared.id, "mode": "file_access", "file_access": "check_file_info", "created": 0, "timestamp": 0,
            "user": ""}
