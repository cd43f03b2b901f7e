"""The fake Discord's REST API under ``/api/v10``: the route table, the middleware that records
every call, checks the bot token and plays scripted failures, and one handler per route."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from platforms.fakes._discord_files import parse_multipart
from platforms.fakes._discord_mentions import Pings, Refused, pings
from platforms.fakes._discord_model import FLAG_LOADING, Call, FakeMessage, _user

TEXT_LIMIT = 2000
"""In code points, as ``len``: Discord's API is Python 3 and counts them (discord/discord-api-docs#1315), so
an emoji outside the Basic Multilingual Plane is one character, not two UTF-16 units."""
INTERACTION_ACK_SECONDS = 3.0
FLAG_EPHEMERAL = 64
"""A message only the interaction's user sees."""
_MULTIPART = web.RequestKey("multipart", tuple)
"""A multipart message create's parsed payload and files (its body is read once, recording it)."""
INTERACTION_TOKEN_SECONDS = 15 * 60
NONCE_SECONDS = 5 * 60
"""How long an enforced nonce is checked for: "the past few minutes", Discord says."""
THREAD_ARCHIVED = 50083
"""Discord's code for a write an archived thread refuses (an edit), and a locked one (any write of a bot without
Manage Threads there: discord/discord-api-docs#6884, #7707, 403 then)."""
_DROPPED = web.ResponseKey("dropped", bool)
"""Set on the response of a call whose connection a scripted failure closed: the bot saw no answer."""


@dataclass
class _Failure:
    route: str
    status: int
    retry_after: float
    code: int | None
    message: str | None
    errors: dict[str, Any] | None
    drop: bool = False
    """No answer at all: the connection closes (a reset, a proxy timing out)."""
    after: bool = False
    """Played once the call was carried out (the message stored), in place of its answer."""
    headers: dict[str, str] | None = None
    """The answer's headers in place of Discord's own (a 429's ``Via``, ``Retry-After`` and scope)."""
    text: str | None = None
    """A body of plain text in place of Discord's JSON (a proxy's or Cloudflare's page), or of JSON of another
    shape with ``headers`` saying ``Content-Type: application/json``."""


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    # Exactly `application/json`, never with a charset: discord.py compares for equality.
    return web.Response(
        status=status, body=json.dumps(data).encode(), headers={"Content-Type": "application/json", **(headers or {})}
    )


def _error(status: int, code: int, message: str, errors: dict[str, Any] | None = None) -> web.Response:
    body: dict[str, Any] = {"code": code, "message": message}
    if errors:
        body["errors"] = errors
    return _json(body, status)


class DiscordRest:
    """The REST half of `FakeDiscord`, which holds the state (calls, commands, interactions,
    scripted failures) and mixes this in; `_build_app` also mounts the gateway's ``/gateway``."""

    def _build_app(self) -> web.Application:
        # Uploads up to the largest guild limit reach the handlers, which answer as Discord does.
        app = web.Application(middlewares=[self._record], client_max_size=101 * 1024 * 1024)
        app.router.add_get("/gateway", self._gateway)
        r = "/api/v10"
        routes: list[tuple[str, str, Callable[..., Any]]] = [
            ("GET", "/gateway", self._get_gateway),
            ("GET", "/gateway/bot", self._get_gateway),
            ("GET", "/users/@me", self._get_me),
            ("GET", "/oauth2/applications/@me", self._get_application),
            ("PUT", "/applications/{application_id}/commands", self._put_commands),
            ("PUT", "/applications/{application_id}/guilds/{guild_id}/commands", self._put_commands),
            ("GET", "/applications/{application_id}/commands", self._get_commands),
            ("GET", "/applications/{application_id}/guilds/{guild_id}/commands", self._get_commands),
            ("GET", "/channels/{channel_id}", self._get_channel),
            ("GET", "/channels/{channel_id}/messages", self._get_messages),
            ("POST", "/channels/{channel_id}/messages", self._create_message),
            ("GET", "/channels/{channel_id}/messages/{message_id}", self._get_message),
            ("PATCH", "/channels/{channel_id}/messages/{message_id}", self._edit_message),
            ("DELETE", "/channels/{channel_id}/messages/{message_id}", self._delete_message),
            ("POST", "/channels/{channel_id}/typing", self._typing),
            ("POST", "/interactions/{interaction_id}/{token}/callback", self._callback),
            ("POST", "/webhooks/{application_id}/{token}", self._followup),
            ("GET", "/webhooks/{application_id}/{token}/messages/{message_id}", self._get_webhook_message),
            ("PATCH", "/webhooks/{application_id}/{token}/messages/{message_id}", self._edit_webhook_message),
            ("DELETE", "/webhooks/{application_id}/{token}/messages/{message_id}", self._delete_webhook_message),
        ]
        for method, path, handler in routes:
            app.router.add_route(method, r + path, handler)
        app.router.add_get("/attachments/{channel_id}/{attachment_id}/{filename}", self._serve_attachment)
        return app

    @web.middleware
    async def _record(self, request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
        try:
            return await self._handle(request, handler)
        except web.HTTPException:
            raise
        except Exception as exc:  # a bug in the fake: kept for tests to assert on, not only logged
            self.errors.append(exc)
            raise

    async def _handle(self, request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
        if request.path == "/gateway" or request.path.startswith("/attachments/"):
            return await handler(request)  # the gateway, and the CDN: no token, not REST calls
        path = request.path.removeprefix("/api/v10")
        resource = request.match_info.route.resource
        template = resource.canonical.removeprefix("/api/v10") if resource is not None else path
        name = f"{request.method} {template}"
        body: Any = None
        if request.can_read_body:
            raw = await request.read()
            if request.content_type == "multipart/form-data":
                request[_MULTIPART] = body, uploads = parse_multipart(request.headers["Content-Type"], raw)
                body = body | {"files": [u.filename for u in uploads]}
            else:
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode(errors="replace")
        call = Call(request.method, name, path, body, dict(request.query), dict(request.headers))
        self.calls.append(call)
        if (held := next((r for route, r in self._holds if route in (call.route, f"{call.method} {call.path}")),
                         None)) is not None:
            self._touch()  # a test waits for the call to have come
            await held.wait()
        response = self._scripted_failure(call, request)
        if response is None and not name.startswith(("POST /interactions", "GET /webhooks", "POST /webhooks",
                                                      "PATCH /webhooks", "DELETE /webhooks")):
            if request.headers.get("Authorization") != f"Bot {self.token}":
                response = _error(401, 0, "401: Unauthorized")
        limits: dict[str, str] = {}
        if response is None and self.rate_limits is not None and "channel_id" in request.match_info:
            admitted = self.rate_limits.admit(name, request.match_info["channel_id"])
            if isinstance(admitted, tuple):
                status, headers, refusal = admitted
                response = _json(refusal, status, headers)
            else:
                limits = admitted
        if response is None:
            response = await handler(request)
            response.headers.update(limits)
            if response.status < 300:
                response = self._scripted_failure(call, request, after=True) or response
        call.status = 0 if response.get(_DROPPED) else response.status
        self._touch()
        return response

    def _scripted_failure(self, call: Call, request: web.Request, *, after: bool = False) -> web.Response | None:
        for failure in self._failures:
            if failure.after == after and failure.route in (call.route, f"{call.method} {call.path}"):
                self._failures.remove(failure)
                if failure.drop:
                    assert request.transport is not None
                    request.transport.abort()  # the client sees the server disconnect before any answer
                    dropped = web.Response()
                    dropped[_DROPPED] = True
                    return dropped
                if failure.text is not None:  # as bytes: the headers' Content-Type is sent as it is, charset or not
                    headers = {"Content-Type": "text/plain; charset=utf-8", **(failure.headers or {})}
                    return web.Response(status=failure.status, body=failure.text.encode(), headers=headers)
                if failure.status == 429:
                    body = {"message": "You are being rate limited.", "retry_after": failure.retry_after,
                            "global": False, "code": failure.code or 0}
                    headers = {"Via": "1.1 google", "Retry-After": str(max(1, round(failure.retry_after))),
                               "X-RateLimit-Scope": "user"}
                    return _json(body, 429, headers if failure.headers is None else failure.headers)
                error = _error(failure.status, failure.code or 0, failure.message or "Scripted failure", failure.errors)
                error.headers.update(failure.headers or {})
                return error
        return None

    async def _get_gateway(self, request: web.Request) -> web.Response:
        limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
        return _json({"url": self.gateway_url, "shards": 1, "session_start_limit": limit})

    async def _get_me(self, request: web.Request) -> web.Response:
        return _json(_user(self.bot_id, self.bot_name, bot=True))

    async def _get_application(self, request: web.Request) -> web.Response:
        return _json({
            "id": self.application_id, "name": self.bot_name, "description": "", "icon": None,
            "bot_public": True, "bot_require_code_grant": False, "owner": _user(self.new_id()),
            "verify_key": "0" * 64, "flags": self._app_flags(), "summary": "",
        })

    async def _put_commands(self, request: web.Request) -> web.Response:
        guild = request.match_info.get("guild_id")
        registered = []
        for command in await request.json():
            registered.append(command | {"id": self.new_id(), "application_id": self.application_id,
                                         "version": self.new_id(), "guild_id": guild})
        self.commands[guild] = registered
        return _json(registered)

    async def _get_commands(self, request: web.Request) -> web.Response:
        return _json(self.commands.get(request.match_info.get("guild_id"), []))

    def _check_content(self, body: dict[str, Any]) -> web.Response | Pings:
        """Discord's refusal of the content or its ``allowed_mentions``, else whom it pings."""
        content = body.get("content")
        if content is not None and len(content) > TEXT_LIMIT:
            errors = {"content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH",
                                               "message": f"Must be {TEXT_LIMIT} or fewer in length."}]}}
            return _error(400, 50035, "Invalid Form Body", errors)
        try:
            return pings(content or "", body.get("allowed_mentions"))
        except Refused as exc:
            errors = {"allowed_mentions": {"_errors": [{"code": "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                                                        "message": str(exc)}]}}
            return _error(400, 50035, "Invalid Form Body", errors)

    async def _get_channel(self, request: web.Request) -> web.Response:
        channel = self._channel_json(request.match_info["channel_id"])
        if channel is None:
            return _error(404, 10003, "Unknown Channel")
        return self._closed(request.match_info["channel_id"]) or _json(channel)

    async def _get_messages(self, request: web.Request) -> web.Response:
        """Discord's paging: ``after`` gives the oldest ``limit`` messages after that id, ``before`` (or
        neither) the newest ones before it; either way newest first. ``limit`` 1-100, 50 by default. An
        ephemeral message is no part of the channel's history: only its user ever saw it."""
        channel = request.match_info["channel_id"]
        if channel not in self._channels:
            return _error(404, 10003, "Unknown Channel")
        if (closed := self._closed(channel)) is not None:
            return closed
        try:
            limit = int(request.query.get("limit", 50))
            after, before = (int(request.query[k]) if k in request.query else None for k in ("after", "before"))
        except ValueError:
            return _error(400, 50035, "Invalid Form Body")
        if not 1 <= limit <= 100:
            return _error(400, 50035, "Invalid Form Body", {"limit": {"_errors": [
                {"code": "NUMBER_TYPE_MAX", "message": "int value should be less than or equal to 100."}]}})
        found = [m for m in self.messages[channel] if not m.deleted and not m.flags & FLAG_EPHEMERAL
                 and (after is None or int(m.id) > after) and (before is None or int(m.id) < before)]
        page = found[:limit] if after is not None and before is None else found[-limit:]
        return _json([self._history_json(m) for m in reversed(page)])

    async def _get_message(self, request: web.Request) -> web.Response:
        """One message of the channel, as its history serves it (an ephemeral one is in no channel)."""
        channel = request.match_info["channel_id"]
        if channel not in self._channels:
            return _error(404, 10003, "Unknown Channel")
        if (closed := self._closed(channel)) is not None:
            return closed
        message = self._find(channel, request.match_info["message_id"])
        if message is None or message.flags & FLAG_EPHEMERAL:
            return _error(404, 10008, "Unknown Message")
        return _json(self._history_json(message))

    async def _create_message(self, request: web.Request) -> web.Response:
        channel = request.match_info["channel_id"]
        if channel not in self._channels:
            return _error(404, 10003, "Unknown Channel")
        body, uploads = request.get(_MULTIPART) or (await request.json(), [])
        if (closed := self._closed(channel, post=True)) is not None:
            return closed
        if self._thread_only(channel):
            return _error(400, 50008, "Cannot send messages in a non-text channel")
        denied = self.denied[channel]
        if "send_messages" in denied or (uploads and "attach_files" in denied):
            return _error(403, 50013, "Missing Permissions")
        if body.get("message_reference") and "read_message_history" in denied:
            return _error(403, 160002, "Cannot reply without permission to read message history")
        if self._locked_out(channel):
            return _error(403, THREAD_ARCHIVED, "Thread is archived")
        if isinstance(pinged := self._check_content(body), web.Response):
            return pinged
        if not body.get("content") and not uploads:
            return _error(400, 50006, "Cannot send an empty message")
        if any(len(u.data) > self._upload_limit(channel) for u in uploads):
            return _error(413, 40005, "Request entity too large")
        nonce = body.get("nonce")
        if nonce is not None and body.get("enforce_nonce") and (earlier := self._nonced(str(nonce))) is not None:
            return _json(self._message_json(earlier))  # Discord returns the first message again
        reference = body.get("message_reference") or {}
        replied = self._find(channel, str(reference["message_id"])) if reference.get("message_id") else None
        if reference and replied is None and reference.get("fail_if_not_exists", True):
            return _error(400, 50035, "Invalid Form Body", {"message_reference": {"_errors": [
                {"code": "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "message": "Unknown message"}]}})
        if self._archived(channel):
            self._set_archived(channel, False)  # a post unarchives the thread, as Discord does (THREAD_UPDATE)
        message = self._store(channel, self.bot_id, body.get("content") or "", from_bot=True,
                              flags=int(body.get("flags") or 0), nonce=None if nonce is None else str(nonce),
                              attachments=self._attachments(channel, uploads), pings=pinged,
                              reply_to=None if replied is None else replied.id)
        return _json(self._echo(message))

    def _nonced(self, nonce: str) -> FakeMessage | None:
        """The bot's message posted with ``nonce`` within `NONCE_SECONDS` (on `clock`), in any channel:
        Discord checks the nonces of the author's messages, not of the channel's."""
        since = self.clock() - NONCE_SECONDS
        return next((m for channel in self.messages.values() for m in channel
                     if m.from_bot and m.nonce == nonce and m.at > since), None)

    async def _edit_message(self, request: web.Request) -> web.Response:
        channel, message_id = request.match_info["channel_id"], request.match_info["message_id"]
        if channel not in self._channels:
            return _error(404, 10003, "Unknown Channel")
        if (closed := self._closed(channel)) is not None:
            return closed
        message = self._find(channel, message_id)
        if message is None:
            return _error(404, 10008, "Unknown Message")
        if self._locked_out(channel):
            return _error(403, THREAD_ARCHIVED, "Thread is archived")
        if self._archived(channel):
            return _error(400, THREAD_ARCHIVED, "Thread is archived")  # an edit does not unarchive it, as a post does
        if not message.from_bot or message.interaction_id is not None:
            return _error(403, 50005, "Cannot edit a message authored by another user")
        return self._apply_edit(message, await request.json())

    def _apply_edit(self, message: FakeMessage, body: dict[str, Any]) -> web.Response:
        if isinstance(pinged := self._check_content(body), web.Response):
            return pinged
        if "content" in body:
            message.edits.append(message.content)
            message.content = body["content"]
            message.pings = pinged
            message.flags &= ~FLAG_LOADING
        self._touch()
        return _json(self._message_json(message))

    async def _delete_message(self, request: web.Request) -> web.Response:
        if (closed := self._closed(request.match_info["channel_id"])) is not None:
            return closed
        message = self._find(request.match_info["channel_id"], request.match_info["message_id"])
        if message is None:
            return _error(404, 10008, "Unknown Message")
        message.deleted = True
        return web.Response(status=204)

    async def _typing(self, request: web.Request) -> web.Response:
        if request.match_info["channel_id"] not in self._channels:
            return _error(404, 10003, "Unknown Channel")
        if (closed := self._closed(request.match_info["channel_id"])) is not None:
            return closed
        if self._thread_only(request.match_info["channel_id"]):
            return _error(400, 50008, "Cannot send messages in a non-text channel")
        if "send_messages" in self.denied[request.match_info["channel_id"]]:
            return _error(403, 50013, "Missing Permissions")
        if self._locked_out(request.match_info["channel_id"]):
            return _error(403, THREAD_ARCHIVED, "Thread is archived")
        return web.Response(status=204)

    def _interaction_by_token(self, token: str) -> tuple[str, dict[str, Any]] | None:
        return next(((i, v) for i, v in self.interactions.items() if v["token"] == token), None)

    def _webhook_interaction(self, token: str) -> tuple[str, dict[str, Any]] | web.Response:
        """The interaction a follow-up, edit or delete names, or Discord's refusal: an unknown
        token is 404 Unknown Webhook, one older than 15 minutes 401 Invalid Webhook Token."""
        found = self._interaction_by_token(token)
        if found is None:
            return _error(404, 10015, "Unknown Webhook")
        if self.clock() - found[1]["created"] > INTERACTION_TOKEN_SECONDS:
            return _error(401, 50027, "Invalid Webhook Token")
        return found

    async def _callback(self, request: web.Request) -> web.Response:
        interaction_id = request.match_info["interaction_id"]
        record = self.interactions.get(interaction_id)
        if record is None or record["token"] != request.match_info["token"]:
            return _error(404, 10062, "Unknown interaction")
        if record["responses"]:
            return _error(400, 40060, "Interaction has already been acknowledged.")
        if self.clock() - record["created"] > INTERACTION_ACK_SECONDS:
            return _error(404, 10062, "Unknown interaction")
        body = await request.json()
        data = body.get("data") or {}
        if isinstance(pinged := self._check_content(data), web.Response):
            return pinged
        kind = body.get("type")
        record["responses"].append(kind)
        # Fixed here for whatever replaces a deferral's "thinking…": Discord renders it for all or for one now.
        ephemeral = int(data.get("flags") or 0) & FLAG_EPHEMERAL
        message = self._store(record["channel_id"], self.bot_id, data.get("content") or "", from_bot=True,
                              flags=(FLAG_LOADING if kind == 5 else 0) | ephemeral, interaction_id=interaction_id,
                              pings=pinged)
        record["original"] = message.id
        resource: dict[str, Any] = {"type": kind, "message": self._message_json(message)}
        return _json({
            "interaction": {"id": interaction_id, "type": 2, "response_message_id": message.id,
                            "response_message_loading": kind == 5, "response_message_ephemeral": bool(ephemeral)},
            "resource": resource,
        })

    async def _followup(self, request: web.Request) -> web.Response:
        found = self._webhook_interaction(request.match_info["token"])
        if isinstance(found, web.Response):
            return found
        interaction_id, record = found
        if not record["responses"]:
            return _error(404, 10015, "Unknown Webhook")
        # Files come as a channel's message create brings them: multipart, ``payload_json`` + ``files[n]``.
        body, uploads = request.get(_MULTIPART) or (await request.json(), [])
        if isinstance(pinged := self._check_content(body), web.Response):
            return pinged
        channel = record["channel_id"]
        if not body.get("content") and not uploads:
            return _error(400, 50006, "Cannot send an empty message")
        if any(len(u.data) > self._upload_limit(channel) for u in uploads):
            return _error(413, 40005, "Request entity too large")
        original = self._find(channel, record["original"] or "")
        if original is not None and original.flags & FLAG_LOADING:
            # Discord's rule: a follow-up while "thinking…" shows is that response's answer, seen by whom the
            # deferral chose, whatever its own flags say; only a later one (or one after the deferred response
            # was deleted) is ephemeral by its flag 64.
            original.attachments = self._attachments(channel, uploads)
            response = self._apply_edit(original, body)
            return response if request.query.get("wait") in ("true", "1", "True") else web.Response(status=204)
        message = self._store(channel, self.bot_id, body.get("content") or "", from_bot=True,
                              flags=int(body.get("flags") or 0), interaction_id=interaction_id, pings=pinged,
                              attachments=self._attachments(channel, uploads))
        # Not over the gateway when ephemeral: Discord shows it to the interaction's user alone.
        data = self._message_json(message, guild=self._channel_guild.get(message.channel_id)) \
            if message.flags & FLAG_EPHEMERAL else self._echo(message)
        if request.query.get("wait") in ("true", "1", "True"):
            return _json(data)
        return web.Response(status=204)

    def _webhook_message(self, request: web.Request) -> Any:
        """The message a webhook edit, read or delete names (``@original``: the interaction's
        first answer), or Discord's refusal."""
        found = self._webhook_interaction(request.match_info["token"])
        if isinstance(found, web.Response):
            return found
        _, record = found
        message_id = request.match_info["message_id"]
        message = self._find(record["channel_id"], record["original"] or "" if message_id == "@original" else message_id)
        return _error(404, 10008, "Unknown Message") if message is None else message

    async def _delete_webhook_message(self, request: web.Request) -> web.Response:
        message = self._webhook_message(request)
        if isinstance(message, web.Response):
            return message
        message.deleted = True
        return web.Response(status=204)

    async def _get_webhook_message(self, request: web.Request) -> web.Response:
        message = self._webhook_message(request)
        return message if isinstance(message, web.Response) else _json(self._message_json(message))

    async def _edit_webhook_message(self, request: web.Request) -> web.Response:
        message = self._webhook_message(request)
        if isinstance(message, web.Response):
            return message
        return self._apply_edit(message, await request.json())
