"""The fake Slack's Web API (``POST /api/<method>``), its ``response_url`` endpoints, and the
message store that ``chat.*`` methods and pushed events share."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from aiohttp import web

from platforms.fakes._slack_limits import RateLimited
from platforms.fakes._slack_types import Call, Failure


def _ts(ts: Any) -> tuple[int, int]:
    seconds, _, micros = str(ts).partition(".")
    return int(seconds or 0), int(micros.ljust(6, "0")[:6] or 0)


def _between(ts: str, p: dict[str, Any]) -> bool:
    """Whether a message is in the ``oldest``..``latest`` range asked for: both ends left out unless
    ``inclusive``, as Slack does."""
    inclusive = str(p.get("inclusive", "")).lower() in {"1", "true"}
    oldest, latest = p.get("oldest"), p.get("latest")
    if oldest and (_ts(ts) < _ts(oldest) or (_ts(ts) == _ts(oldest) and not inclusive)):
        return False
    return not (latest and (_ts(ts) > _ts(latest) or (_ts(ts) == _ts(latest) and not inclusive)))


MESSAGE_METHODS = frozenset({"chat.postMessage", "files.completeUploadExternal"})
"""What a free workspace's limit on messages (`FakeSlack.exceed_message_limit`) refuses: posts and file shares."""
BOT_SCOPES = ("chat:write", "commands", "files:read", "files:write", "im:history", "channels:history",
              "groups:history", "mpim:history", "channels:read", "groups:read", "users:read")
"""The bot scopes of ``deploy/slack-app-manifest.yaml``: what `FakeSlack.bot_scopes` lists by default."""


def _json(body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(body, status=status, headers=headers)


class SlackWebApi:
    """The Web API for `FakeSlack`, which holds the state (calls, messages, ephemerals, scripted
    failures) and mixes this in."""

    async def _api(self, request: web.Request) -> web.Response:
        self.in_flight += 1
        try:
            return await self._answer(request)
        finally:
            self.in_flight -= 1

    async def _answer(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            params.update(await request.json())
        elif request.can_read_body:
            params.update(await request.post())
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else params.pop("token", None)
        self.calls.append(Call(method, params, token))
        self._bump()
        held = self._holds.get(method)
        if held is not None:
            await held.wait()
        failure = self._next_failure(method)
        if failure is not None and not failure.after:
            return self._failure_response(request, failure)
        wanted = self.app_token if method == "apps.connections.open" else self.bot_token
        if token != wanted:
            return _json({"ok": False, "error": "not_authed" if not token else "invalid_auth"})
        if token == self.bot_token and self.bot_token_revoked:
            return _json({"ok": False, "error": "token_revoked"})
        handler = self._methods.get(method)
        if handler is None:
            return _json({"ok": False, "error": "unknown_method"})
        if (refusal := self._refusal(method, params)) is not None:  # a channel the bot was removed from, say
            return _json({"ok": False, "error": refusal})
        if method in MESSAGE_METHODS and self.message_limit is not None:
            clock, until = self.message_limit
            if clock.monotonic() < until:  # whichever channel: the workspace's limit
                return _json({"ok": False, "error": "message_limit_exceeded"})
        admitted = None
        if self.rate_limits is not None:
            try:
                admitted = self.rate_limits.admit(method, params)
            except RateLimited as exc:
                return _json({"ok": False, "error": "ratelimited"}, 429, {"Retry-After": str(exc.retry_after)})
        answer = handler(self, params)
        if admitted is not None and not answer.get("ok"):
            self.rate_limits.withdraw(admitted)
        if failure is not None:
            return self._failure_response(request, failure)
        # As Slack lists the token's scopes in each answer; the app token's are not the bot's.
        scoped = token == self.bot_token and self.bot_scopes is not None
        return _json(answer, headers={"x-oauth-scopes": ",".join(self.bot_scopes)} if scoped else None)

    def _next_failure(self, method: str) -> Failure | None:
        queue = self._failures.get(method)
        return queue.popleft() if queue else None

    @staticmethod
    def _failure_response(request: web.Request, failure: Failure) -> web.Response:
        if failure.drop:
            assert request.transport is not None
            request.transport.abort()  # the client sees the server disconnect before any answer
            return web.Response()
        headers = {"Retry-After": f"{failure.retry_after:g}"} if failure.retry_after is not None else {}
        if failure.body is not None:  # as bytes: the Content-Type is sent as it is, JSON or not
            return web.Response(status=failure.status, body=failure.body.encode(),
                                headers={**headers, "Content-Type": failure.content_type})
        return _json({"ok": False, "error": failure.error}, status=failure.status, headers=headers)

    def _auth_test(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": "https://fake.slack.com/", "team": "Fake", "user": "switchboard",
                "team_id": self.team_id, "user_id": self.bot_user_id, "bot_id": self.bot_id,
                "is_enterprise_install": False}

    def _connections_open(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"{self.ws_url}?ticket={uuid.uuid4()}"}

    def _post_message(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = str(p.get("channel") or "")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if not p.get("text") and not p.get("blocks"):
            return {"ok": False, "error": "no_text"}
        if channel.startswith("U"):
            channel = self.dm_channel(channel)
        if len(str(p.get("text", ""))) > 40_000:
            return {"ok": False, "error": "msg_too_long"}
        fields = {"user": self.bot_user_id, "bot_id": self.bot_id, "text": p.get("text", "")}
        if isinstance(p.get("metadata"), dict):
            fields["metadata"] = p["metadata"]
        message = self._store(channel, p.get("thread_ts") or None, fields)
        self._echo({**message, "app_id": self.app_id})
        return {"ok": True, "channel": channel, "ts": message["ts"], "message": message}

    def _update(self, p: dict[str, Any]) -> dict[str, Any]:
        """As Slack: ``parse`` defaults to ``client`` here, unlike chat.postMessage, and in that mode the
        text's ``<…>`` markup (links, mentions) is kept escaped, shown as typed (slackcli#106, on a real
        workspace: ``<https://example.com|label>`` became ``&lt;https://example.com|label&gt;``)."""
        message = self._find(str(p.get("channel")), str(p.get("ts")))
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        text = str(p.get("text") or "")
        if not text and not p.get("blocks"):
            return {"ok": False, "error": "no_text"}
        if len(text) > 40_000:
            return {"ok": False, "error": "msg_too_long"}
        if p.get("parse") != "none":
            text = text.replace("<", "&lt;").replace(">", "&gt;")
        previous = dict(message)
        message["text"] = text
        message["edited"] = {"user": self.bot_user_id, "ts": self._next_ts()}
        self._echo({"subtype": "message_changed", "channel": message["channel"], "message": dict(message),
                    "previous_message": previous, "hidden": True, "ts": self._next_ts()})
        return {"ok": True, "channel": message["channel"], "ts": message["ts"], "text": message["text"],
                "message": message}

    def _delete(self, p: dict[str, Any]) -> dict[str, Any]:
        message = self._find(str(p.get("channel")), str(p.get("ts")))
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        thread_ts = message.get("thread_ts")
        self.messages[(message["channel"], None if thread_ts == message["ts"] else thread_ts)].remove(message)
        self._echo({"subtype": "message_deleted", "channel": message["channel"], "deleted_ts": message["ts"],
                    "previous_message": message, "hidden": True, "ts": self._next_ts()})
        return {"ok": True, "channel": message["channel"], "ts": message["ts"]}

    def _post_ephemeral(self, p: dict[str, Any]) -> dict[str, Any]:
        if not p.get("channel"):
            return {"ok": False, "error": "channel_not_found"}
        ts = self._next_ts()
        self.ephemeral.append({"channel": p["channel"], "user": p.get("user"), "text": p.get("text", ""),
                               "thread_ts": p.get("thread_ts"), "via": "chat.postEphemeral", "ts": ts})
        return {"ok": True, "message_ts": ts}

    def _history(self, p: dict[str, Any]) -> dict[str, Any]:
        """A channel's top-level messages between ``oldest`` and ``latest``, newest first, at most ``limit``."""
        channel = str(p.get("channel") or "")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        between = [m for m in self.messages.get((channel, None), []) if _between(m["ts"], p)]
        return self._page(list(reversed(between)), p)

    def _replies(self, p: dict[str, Any]) -> dict[str, Any]:
        """A thread's parent (always, as Slack's first item), then its replies between ``oldest`` and
        ``latest``, oldest first, at most ``limit``."""
        channel, ts = str(p.get("channel") or ""), str(p.get("ts") or "")
        parent = self._find(channel, ts)
        if parent is None:
            return {"ok": False, "error": "thread_not_found"}
        replies = [m for m in self.messages.get((channel, ts), []) if _between(m["ts"], p)]
        return self._page([parent, *replies], p)

    @staticmethod
    def _page(messages: list[dict[str, Any]], p: dict[str, Any]) -> dict[str, Any]:
        """``limit`` messages from the ``cursor`` on (Slack's cursors are opaque: here an offset),
        with ``response_metadata.next_cursor`` when more follow."""
        limit = int(p.get("limit") or 100)
        try:
            start = int(p.get("cursor") or 0)
        except ValueError:
            return {"ok": False, "error": "invalid_cursor"}
        everything = str(p.get("include_all_metadata", "")).lower() in {"1", "true"}
        page = messages[start:start + limit]
        shown = [m if everything else {k: v for k, v in m.items() if k != "metadata"} for m in page]
        more = len(messages) > start + limit
        return {"ok": True, "messages": shown, "has_more": more,
                "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    _methods: dict[str, Callable[[SlackWebApi, dict[str, Any]], dict[str, Any]]] = {
        "conversations.history": _history,
        "conversations.replies": _replies,
        "auth.test": _auth_test,
        "apps.connections.open": _connections_open,
        "chat.postMessage": _post_message,
        "chat.update": _update,
        "chat.delete": _delete,
        "chat.postEphemeral": _post_ephemeral,
    }

    async def _response_url(self, request: web.Request) -> web.Response:
        body = await request.json()
        call = Call("response_url", {"id": request.match_info["id"], **body}, None)
        self.calls.append(call)
        self._bump()
        held = self._holds.get("response_url")
        if held is not None:
            await held.wait()
            if request.transport is None:  # aiohttp's handler outlives its connection
                self.hung_up.append(call)
        failure = self._next_failure("response_url")
        shown = {"id": request.match_info["id"], "text": body.get("text", ""),
                 "response_type": body.get("response_type", "ephemeral"), "via": "response_url"}
        if failure is not None:
            if failure.after:  # shown, and the answer is lost or a 5xx all the same
                self.ephemeral.append(shown)
            if failure.drop:
                assert request.transport is not None
                request.transport.abort()
                return web.Response()
            headers = {"Retry-After": f"{failure.retry_after:g}"} if failure.retry_after is not None else {}
            return web.Response(status=failure.status if failure.status != 200 else 404, text=failure.error,
                                headers=headers)
        self.ephemeral.append(shown)
        return web.Response(text="ok")

    # -- storage -----------------------------------------------------------------------------

    def _next_ts(self) -> str:
        """Now to the microsecond, as Slack's ``ts`` (so a message's age reads right), and later than
        the last one: a ``ts`` names one message."""
        self._last_ts = max(int(time.time() * 1_000_000), self._last_ts + 1)
        return f"{self._last_ts // 1_000_000}.{self._last_ts % 1_000_000:06d}"

    def _store(self, channel: str, thread_ts: str | None, fields: dict[str, Any]) -> dict[str, Any]:
        message = {"type": "message", "channel": channel, "ts": self._next_ts(), **fields}
        if thread_ts is not None:
            message["thread_ts"] = thread_ts
            parent = self._find(channel, thread_ts)
            if parent is not None:  # Slack marks a thread's parent, as history shows it
                parent.update(thread_ts=thread_ts, reply_count=int(parent.get("reply_count", 0)) + 1,
                              latest_reply=message["ts"])
        self.messages[(channel, thread_ts)].append(message)
        self._bump()
        return message

    def _find(self, channel: str, ts: str) -> dict[str, Any] | None:
        for (chan, _), messages in self.messages.items():
            if chan == channel:
                for message in messages:
                    if message["ts"] == ts:
                        return message
        return None

    def _author(self, channel: str, ts: str) -> str | None:
        message = self._find(channel, ts)
        return message.get("user") if message else None

    def _echo(self, event: dict[str, Any]) -> None:
        """Slack sends the bot's own posts, edits and deletions back as message events."""
        if self.echo_bot_messages and (self.open_connections or self.events_url):
            self._spawn(self.push_event({**event, "event_ts": event.get("ts")}))
