"""A loopback fake of Slack: the Web API, Socket Mode, signed HTTP delivery and response URLs.

The real slack-bolt / slack-sdk clients talk to it over real sockets: point
``AsyncWebClient(base_url=fake.api_base)`` at it and ``apps.connections.open``
hands out the fake's own WebSocket URL, so Socket Mode follows without patching.

What it does:

- Web API (``POST /api/<method>``, JSON or form): ``auth.test``, ``apps.connections.open``,
  ``chat.postMessage`` (keeping its ``metadata``), ``chat.update`` (which, unless given ``parse``
  ``none``, keeps the text's ``<…>`` markup escaped, as Slack does), ``chat.delete``,
  ``chat.postEphemeral``, ``conversations.history`` (newest first) and ``conversations.replies``
  (the parent, then its replies oldest first) with ``oldest``, ``latest``, ``inclusive``,
  ``limit``, ``include_all_metadata`` and ``cursor`` (pages of ``limit``); a thread's parent
  carries ``thread_ts``, ``reply_count`` and ``latest_reply`` as Slack's do; ``files.info``; ``users.info`` of
  the users a test adds (`add_user`; ``user_not_found`` for any other id). Bearer tokens
  are checked (``xoxb`` for chat, ``xapp`` for connections); answers are ``application/json``, the bot
  token's listing its scopes in ``x-oauth-scopes`` (`bot_scopes`).
  Every call is recorded in `calls`; messages are kept per ``(channel, thread_ts)`` in
  `messages` (``thread_ts`` is None at the top level), ephemerals in `ephemeral`.
- Socket Mode (``/link``): ``hello`` on connect, envelopes (``events_api``,
  ``slash_commands``), ack collection (`acks`), redelivery of an ``events_api`` envelope not
  acked within ``ack_timeout`` (``retry_attempt`` + 1, up to 3, then given up: `given_up`), envelopes sent
  while no client is connected kept for the next one, or lost after ``give_up_after`` seconds (`given_up`
  too), ``disconnect`` messages
  (`disconnect`), dropped sockets (`drop_socket`), half-open ones (`stall`), refused handshakes
  (`refuse_sockets`) and lost acks (`lose_next_ack`).
- HTTP delivery to a gateway (`send_http_event`, `send_http_command`): v0-signed, with
  ``X-Slack-Retry-Num``; pushes made without a Socket Mode connection go there when
  ``events_url`` is set, retried like Slack does on errors and timeouts (scaled down).
- ``response_url`` endpoints (``/response/<id>``) that slash-command payloads point at, and a
  slash command answered in its acknowledgement (the HTTP response's body, the Socket Mode ack's
  ``payload``), shown as Slack does: in `ephemeral` (``"via": "ack"``).
- Users' edits and deletions (`push_edit`, `push_deletion`): ``message_changed`` and
  ``message_deleted`` events, as Slack sends them; a link's preview (`push_unfurl`) is a ``message_changed``
  too, its text as it was.
- Files users share (`push_file`): a ``file_share`` message, ``files.info``, and the private
  download URL that needs the bot token (`files`, `downloads`).
- Files the bot uploads as slack-sdk's ``files_upload_v2`` does: ``files.getUploadURLExternal``,
  the bytes to the upload URL, ``files.completeUploadExternal`` (`platforms.fakes._slack_uploads`).
- A revoked bot token (`bot_token_revoked`): ``token_revoked`` for every bot-token call.
- Channels the bot cannot write to (`platforms.fakes._slack_membership`): removed from one (`remove_bot`,
  ``member_left_channel`` and ``channel_left`` sent; its writes and reads refused ``not_in_channel``), one
  archived (`archive`, ``channel_archive``; writes refused ``is_archived``) or deleted (`delete_channel`,
  ``channel_deleted``; ``channel_not_found``), and back (`add_bot`, ``member_joined_channel``; `unarchive`); a
  channel given a new id (`change_channel_id`, ``channel_id_changed``; the old one ``channel_not_found``).
- Slack's rate limits, off until `enforce_rate_limits` turns them on: ``chat.postMessage`` past
  one a second per channel, ``chat.update`` / ``chat.delete`` past Tier 3 (50 a minute) and the
  upload methods past Tier 4 (100 a minute) are refused with HTTP 429, ``Retry-After`` and
  ``ratelimited``; ``rate_limits.calls`` and ``rate_limits.refused`` record what they let
  through and refused (`platforms.fakes._slack_limits`).
- A free workspace past its limit on messages (`exceed_message_limit`): every post and file share, in any
  channel, refused with ``message_limit_exceeded`` for as long as it lasts.
- Scripted failures (`fail_next`): ``ok:false`` errors, 429 with ``Retry-After`` (without, for
  ``message_limit_exceeded``, as Slack sends it), connections
  closed without an answer (``drop=True``), and answers lost after the call took effect
  (``after=True``); calls held in flight until a test releases them (`hold`).

Run it alone with ``python -m platforms.fakes.slack --port 8790``; ``/_fake/dm``,
``/_fake/mention`` and ``/_fake/command`` (POST JSON) push events, ``/_fake/messages`` lists
the messages so far.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
import uuid
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp
from aiohttp import web

# These names were defined in this module before it was split; they stay importable from here
# (hence the noqa: some are only re-exported).
from platforms.fakes._slack_files import SharedFile, SlackFiles
from platforms.fakes._slack_http import HttpResult, SlackHttpDelivery, sign  # noqa: F401
from platforms.fakes._slack_limits import PER_CHANNEL, TIERS, MonotonicClock, SlackRateLimits, Window
from platforms.fakes._slack_membership import SlackMembership
from platforms.fakes._slack_socket import SlackSocketMode
from platforms.fakes._slack_types import Ack, Call, Connection, Envelope, Failure, Key  # noqa: F401
from platforms.fakes._slack_uploads import MAX_UPLOAD, SlackUploads, _Pending
from platforms.fakes._slack_users import SlackUsers
from platforms.fakes._slack_web_api import BOT_SCOPES, SlackWebApi, _json
from platforms.fakes._waiting import wait_until


class FakeSlack(SlackWebApi, SlackSocketMode, SlackHttpDelivery, SlackFiles, SlackUploads, SlackMembership,
                SlackUsers):
    _methods = {**SlackWebApi._methods, "files.info": SlackFiles._files_info,
                "files.getUploadURLExternal": SlackUploads._get_upload_url,
                "files.completeUploadExternal": SlackUploads._complete_upload, "users.info": SlackUsers._users_info}

    def __init__(
        self,
        *,
        bot_token: str = "xoxb-fake",
        app_token: str = "xapp-fake",
        signing_secret: str | None = None,
        events_url: str | None = None,
        team_id: str = "T0FAKE",
        app_id: str = "A0FAKE",
        bot_user_id: str = "UBOT",
        bot_id: str = "BBOT",
        ack_timeout: float = 3.0,
        http_retry_delays: tuple[float, ...] = (0.0, 0.1, 0.2),
        echo_bot_messages: bool = True,
        give_up_after: float | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.bot_token, self.app_token = bot_token, app_token
        self.bot_scopes: list[str] | None = list(BOT_SCOPES)
        """The bot token's scopes, listed in each of its Web API answers' ``x-oauth-scopes`` header (None: no
        header, as behind a proxy that strips it). Only listed: a call a scope left out would need still works."""
        self.refusals: dict[str, str] = {}
        """Channels the bot cannot write to, and Slack's error for it there (`remove_bot`, `archive`,
        `delete_channel`)."""
        self.bot_token_revoked = False
        """While True, every Web API call made with the bot token is answered ``token_revoked``, as
        Slack answers once the token is revoked or the app uninstalled (set it False again: the
        token works again, as a reinstall's new one would)."""
        self.signing_secret, self.events_url = signing_secret, events_url
        self.team_id, self.app_id, self.bot_user_id, self.bot_id = team_id, app_id, bot_user_id, bot_id
        self.ack_timeout, self.http_retry_delays = ack_timeout, http_retry_delays
        self.echo_bot_messages = echo_bot_messages
        self._host, self._port = host, port
        self.calls: list[Call] = []
        self.in_flight = 0
        """Web API calls received and not answered yet: a test running a fake clock lets none of it pass while
        one is under way, or the call would reach Slack's rate limits later than it left the client."""
        self.messages: dict[Key, list[dict[str, Any]]] = defaultdict(list)
        self.ephemeral: list[dict[str, Any]] = []
        self.hung_up: list[Call] = []
        """``response_url`` calls held (`hold`) whose client hung up before the answer: cut off midway (by a stop,
        say), whatever Slack then showed."""
        self.connections: list[Connection] = []
        self.envelopes: dict[str, Envelope] = {}
        self.acks: list[Ack] = []
        self.http_results: list[HttpResult] = []
        self.files: dict[str, SharedFile] = {}
        self.files_read_scope = True
        self.users: dict[str, dict[str, Any]] = {}
        self.downloads: list[str] = []
        """Ids of the files downloaded through their private URL, in order."""
        self._file_ids = itertools.count(1)
        self.pending_uploads: dict[str, _Pending] = {}
        self.uploaded: dict[str, int] = {}
        """How many times each file the bot uploads reached the upload URL."""
        self._failures: dict[str, deque[Failure]] = defaultdict(deque)
        self.message_limit: tuple[MonotonicClock, float] | None = None
        """The clock and the moment on it until which the workspace's messages are refused
        (`exceed_message_limit`)."""
        self.rate_limits: SlackRateLimits | None = None
        """Slack's rate limits, once `enforce_rate_limits` turned them on."""
        self._holds: dict[str, asyncio.Event] = {}
        self._lost_acks = 0
        self._refused_sockets = 0
        self._queued: deque[tuple[Envelope, float]] = deque()
        """Envelopes no connection was open for, with when (monotonic) they first were."""
        self.give_up_after = give_up_after
        """Seconds an envelope waits for a Socket Mode connection before it is lost (`given_up`), as
        Slack gives up after its last retry, about five minutes after the first attempt; None: kept
        until a connection opens."""
        self.given_up: list[Envelope] = []
        """Envelopes Slack will not send again unacknowledged: their last retry went unacknowledged, or
        found no connection (``give_up_after``)."""
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._last_ts = 0
        """The newest ``ts`` handed out, in microseconds."""
        self._ids = itertools.count(1)
        self._rr = itertools.count()
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None
        self.base_url = ""

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> FakeSlack:
        app = web.Application(client_max_size=MAX_UPLOAD + 1024 * 1024)  # the upload URL takes Slack's 1 GB
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/upload/v1/{id}", self._upload)
        app.router.add_get("/link", self._socket)
        app.router.add_post("/response/{id}", self._response_url)
        app.router.add_get("/files-pri/{team}-{id:F[0-9]+}/{name}", self._file_download)
        app.router.add_get("/signin", self._signin)
        app.router.add_post("/_fake/{what}", self._control)
        app.router.add_get("/_fake/messages", self._list_messages)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}"
        self._http = aiohttp.ClientSession()
        return self

    async def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for conn in self.connections:
            if conn.open and conn.stalled and conn.request.transport is not None:
                conn.request.transport.abort()  # a close frame would get no answer
            elif conn.open:
                await conn.ws.close()
        if self._http is not None:
            await self._http.close()
            self._http = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeSlack:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def api_base(self) -> str:
        return f"{self.base_url}/api/"

    @property
    def ws_url(self) -> str:
        return self.base_url.replace("http://", "ws://", 1) + "/link"

    @property
    def open_connections(self) -> list[Connection]:
        return [c for c in self.connections if c.open]

    # -- scripting and waiting ---------------------------------------------------------------

    def fail_next(
        self, method: str, error: str = "ratelimited", *, status: int = 200, retry_after: float | None = None,
        times: int = 1, after: bool = False, drop: bool = False, body: str | None = None,
        content_type: str = "text/html",
    ) -> None:
        """Make the next ``times`` calls of ``method`` fail. ``status=429`` sends ``Retry-After``
        (default 1), but for ``message_limit_exceeded`` (a free workspace's limit on messages), which Slack
        sends without one; ``method="response_url"`` scripts the response URLs. ``after``: the call
        takes effect first, and only its answer is the failure (an answer lost on the way).
        ``drop``: the connection closes without any answer instead (a reset, a proxy timing out).
        ``body``: a Web API call's answer is this text as ``content_type`` instead of Slack's JSON
        (``error`` unused): a proxy's page, a body cut short, labelled ``application/json`` or not."""
        if status == 429 and retry_after is None and error != "message_limit_exceeded":
            retry_after = 1
        self._failures[method].extend(Failure(error, status, retry_after, after, drop, body, content_type)
                                      for _ in range(times))

    def exceed_message_limit(self, seconds: float = 60.0, clock: MonotonicClock | None = None) -> None:
        """Refuse every ``chat.postMessage`` and file share (``files.completeUploadExternal``), whichever
        channel it goes to, for ``seconds`` on ``clock`` (a test's fake clock; the real monotonic clock by
        default) with ``message_limit_exceeded`` and HTTP 200, no ``Retry-After``: a free workspace past its
        limit on messages, as Slack refuses it."""
        clock = clock or time
        self.message_limit = (clock, clock.monotonic() + seconds)

    def enforce_rate_limits(self, clock: MonotonicClock | None = None, *, per_channel: Window = PER_CHANNEL,
                            tiers: Mapping[str, Window] = TIERS) -> SlackRateLimits:
        """Refuse calls past Slack's rate limits with HTTP 429, ``Retry-After`` and ``ratelimited``,
        as Slack does (`platforms.fakes._slack_limits`), measuring time on ``clock`` (a test's
        fake clock; the real monotonic clock by default). Returns the `SlackRateLimits`, also
        `rate_limits`, whose ``calls`` and ``refused`` record what it let through and refused."""
        self.rate_limits = SlackRateLimits(clock or time, per_channel=per_channel, tiers=tiers)
        return self.rate_limits

    def hold(self, method: str) -> asyncio.Event:
        """Hold every call of ``method`` (recorded, not yet answered) until the returned event is
        set: a call in flight, for as long as a test needs. ``method="response_url"`` holds the
        response URLs."""
        return self._holds.setdefault(method, asyncio.Event())

    def lose_next_ack(self, count: int = 1) -> None:
        """Ignore the next ``count`` acks, as if they were lost on the way: Slack redelivers."""
        self._lost_acks += count

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def texts(self, channel: str, thread_ts: str | None = None) -> list[str]:
        return [m.get("text", "") for m in self.messages.get((channel, thread_ts), [])]

    def dm_channel(self, user: str) -> str:
        return f"D{user}"

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Return the first truthy ``predicate()``, re-checked on every change to the fake (and
        every 20 ms, for conditions on other objects); TimeoutError after ``timeout`` seconds."""
        return await wait_until(predicate, timeout, changed=lambda: self._changed)

    def _answered_in_ack(self, form: dict[str, Any], answer: dict[str, Any] | str | None) -> None:
        """A slash command's acknowledgement that carries a message: Slack shows it to the user who
        ran the command (``response_type`` "ephemeral", the default) or in the channel."""
        if isinstance(answer, str):
            answer = {"text": answer}
        if not answer or not answer.get("text"):
            return
        self.ephemeral.append({"channel": form["channel_id"], "user": form["user_id"], "text": answer["text"],
                               "response_type": answer.get("response_type", "ephemeral"), "via": "ack"})

    def _bump(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # -- pushing events ----------------------------------------------------------------------

    async def push_dm(self, user: str, text: str) -> dict[str, Any]:
        """A user writes to the bot in a direct message."""
        return await self.push_message(self.dm_channel(user), user, text, channel_type="im")

    async def push_mention(
        self, channel: str, user: str, text: str, thread_ts: str | None = None, *, also_app_mention: bool = False
    ) -> dict[str, Any]:
        """A user mentions the bot in a channel (``<@BOT>`` is prepended unless present). Slack sends
        a ``message`` event; with an ``app_mention`` subscription too, also an ``app_mention``."""
        mention = f"<@{self.bot_user_id}>"
        text = text if mention in text else f"{mention} {text}"
        body = await self.push_message(channel, user, text, thread_ts=thread_ts)
        if also_app_mention:
            event = {**body["event"], "type": "app_mention"}
            event.pop("channel_type", None)
            await self.push_event(event)
        return body

    async def push_message(
        self, channel: str, user: str, text: str, *, thread_ts: str | None = None, channel_type: str = "channel",
        attachments: list[dict[str, Any]] | None = None, broadcast: bool = False,
    ) -> dict[str, Any]:
        """A user posts a message (no mention added); ``thread_ts`` makes it a thread reply.
        ``attachments``: what Slack lists with it, such as a forwarded message (`shared_message`).
        ``broadcast``: a reply also sent to the channel, a ``thread_broadcast`` with its thread's parent as
        ``root``, listed in the thread and at the channel's top level alike."""
        fields: dict[str, Any] = {"user": user, "text": text}
        if attachments:
            fields["attachments"] = attachments
        if broadcast:
            assert thread_ts is not None, "only a thread reply is broadcast"
            fields["subtype"] = "thread_broadcast"
        message = self._store(channel, thread_ts, fields)
        if broadcast:  # the parent as this reply made it: its reply_count and latest_reply count this one
            message["root"] = dict(self._find(channel, str(thread_ts)) or {})
            self.messages[(channel, None)].append(message)
        event = {**message, "channel_type": channel_type, "team": self.team_id,
                 "client_msg_id": str(uuid.uuid4()), "event_ts": message["ts"]}
        if thread_ts is not None and not broadcast:
            event["parent_user_id"] = self._author(channel, thread_ts)
        return await self.push_event(event)

    async def push_edit(self, channel: str, ts: str, text: str) -> dict[str, Any]:
        """A user edits their message: it shows ``text`` and Slack sends a ``message_changed`` event."""
        message = self._find(channel, ts)
        assert message is not None, f"no message {ts} in {channel}"
        previous = dict(message)
        message.update(text=text, edited={"user": message.get("user"), "ts": self._next_ts()})
        return await self._push_changed(channel, message, previous)

    async def push_unfurl(self, channel: str, ts: str, attachment: dict[str, Any]) -> dict[str, Any]:
        """Slack previews a link in a message (an unfurl; `shared_message` makes a Slack message's): it lists
        ``attachment`` with the message and sends ``message_changed``, the text as it was."""
        message = self._find(channel, ts)
        assert message is not None, f"no message {ts} in {channel}"
        previous = dict(message)
        message["attachments"] = [*message.get("attachments", ()), attachment]
        return await self._push_changed(channel, message, previous)

    async def _push_changed(self, channel: str, message: dict[str, Any], previous: dict[str, Any]) -> dict[str, Any]:
        return await self.push_event({"type": "message", "subtype": "message_changed", "channel": channel,
                                      "message": dict(message), "previous_message": previous, "hidden": True,
                                      "channel_type": "im" if channel.startswith("D") else "channel",
                                      "ts": (now := self._next_ts()), "event_ts": now})

    async def push_deletion(self, channel: str, ts: str) -> dict[str, Any]:
        """A user deletes their message: it is gone and Slack sends a ``message_deleted`` event. A thread's
        parent with replies stays as a tombstone ("This message was deleted.", Slackbot's): a ``message_changed``."""
        message = self._find(channel, ts)
        assert message is not None, f"no message {ts} in {channel}"
        channel_type = "im" if channel.startswith("D") else "channel"
        if self.messages.get((channel, ts)):
            previous = dict(message)
            for key in [k for k in message if k not in ("channel", "ts", "thread_ts", "reply_count", "latest_reply")]:
                del message[key]
            message.update(type="message", subtype="tombstone", text="This message was deleted.", user="USLACKBOT",
                           hidden=True)
            return await self._push_changed(channel, message, previous)
        for (chan, _), messages in self.messages.items():  # a broadcast reply is listed twice
            if chan == channel and message in messages:
                messages.remove(message)
        return await self.push_event({"type": "message", "subtype": "message_deleted", "channel": channel,
                                      "channel_type": channel_type, "deleted_ts": ts, "previous_message": message,
                                      "hidden": True, "ts": (now := self._next_ts()), "event_ts": now})

    def shared_message(self, channel: str, user: str, text: str, *, author: str,
                       channel_name: str | None = None) -> dict[str, Any]:
        """The attachment Slack lists with a message that forwards (shares) another: the shared
        message's ``text`` (mrkdwn, escaped as in events), its author and channel; the forwarding
        message's own ``text`` holds only the comment typed with it, if any."""
        ts = f"{time.time():.6f}"
        return {
            "is_share": True, "is_msg_unfurl": True, "ts": ts, "channel_id": channel,
            "channel_name": channel_name or "", "author_id": user, "author_name": author, "author_subname": author,
            "text": text, "fallback": f"[{ts}] {author}: {text}", "mrkdwn_in": ["text"], "color": "D0D0D0",
            "footer": f"Posted in #{channel_name}" if channel_name else "Direct Message",
            "from_url": f"https://fake.slack.com/archives/{channel}/p{ts.replace('.', '')}",
        }

    async def push_event(self, event: dict[str, Any]) -> dict[str, Any]:
        """Deliver one Events API event, wrapped in its ``event_callback``; returns the callback."""
        body = {
            "token": "fake-verification-token",
            "team_id": self.team_id,
            "api_app_id": self.app_id,
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{next(self._ids):08d}",
            "event_time": int(time.time()),
            "authorizations": [{"team_id": self.team_id, "user_id": self.bot_user_id, "is_bot": True}],
        }
        await self._deliver("events_api", body)
        return body

    async def push_slash_command(self, command: str, user: str, channel: str, text: str = "", *,
                                 user_name: str | None = None) -> dict[str, Any]:
        """A user runs a slash command; over Socket Mode when connected, else over HTTP.
        ``text`` as Slack sends it (``&``, ``<`` and ``>`` escaped, as in a message's).
        ``user_name`` is the payload's legacy name field (default: the id in lower case)."""
        rid = f"R{next(self._ids):08d}"
        form = {
            "token": "fake-verification-token", "team_id": self.team_id, "team_domain": "fake",
            "channel_id": channel, "channel_name": "directmessage" if channel.startswith("D") else channel.lower(),
            "user_id": user, "user_name": user_name or user.lower(), "command": command, "text": text,
            "api_app_id": self.app_id, "is_enterprise_install": "false",
            "response_url": f"{self.base_url}/response/{rid}", "trigger_id": f"{rid}.{uuid.uuid4().hex[:12]}",
        }
        await self._deliver("slash_commands", form)
        return form

    async def _deliver(self, kind: str, payload: dict[str, Any]) -> None:
        if not self.open_connections and self.events_url:
            await self._deliver_http(kind, payload)
            return
        envelope = Envelope(str(uuid.uuid4()), kind, payload)
        self.envelopes[envelope.envelope_id] = envelope
        await self._send_envelope(envelope)

    # -- control endpoints for the command-line fake -----------------------------------------

    async def _control(self, request: web.Request) -> web.Response:
        data = await request.json()
        what = request.match_info["what"]
        user = data.get("user", "U0HUMAN")
        if what == "dm":
            body = await self.push_dm(user, data["text"])
        elif what == "mention":
            body = await self.push_mention(data.get("channel", "C0GENERAL"), user, data["text"], data.get("thread_ts"))
        elif what == "command":
            body = await self.push_slash_command(data["command"], user, data.get("channel", self.dm_channel(user)),
                                                 data.get("text", ""))
        else:
            raise web.HTTPNotFound()
        return _json(body)

    async def _list_messages(self, _: web.Request) -> web.Response:
        return _json({"messages": [m for ms in self.messages.values() for m in ms], "ephemeral": self.ephemeral})


async def _serve(args: argparse.Namespace) -> None:
    fake = FakeSlack(bot_token=args.bot_token, app_token=args.app_token, signing_secret=args.signing_secret,
                     events_url=args.events_url, host=args.host, port=args.port)
    async with fake:
        print(f"Fake Slack Web API:  {fake.api_base}   (platforms.slack.api_base)")
        print(f"Socket Mode:         {fake.ws_url}   (handed out by apps.connections.open)")
        print(f"Tokens:              bot_token={fake.bot_token}  app_token={fake.app_token}")
        if fake.events_url:
            print(f"HTTP events go to:   {fake.events_url}  (signing_secret={fake.signing_secret})")
        print(f"Push a DM:           curl -X POST {fake.base_url}/_fake/dm -d '{{\"user\":\"U1\",\"text\":\"hi\"}}'")
        print(f"Messages so far:     {fake.base_url}/_fake/messages")
        print("Ctrl-C to stop.", flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m platforms.fakes.slack", description="A loopback fake Slack.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8790)
    parser.add_argument("--bot-token", default="xoxb-fake")
    parser.add_argument("--app-token", default="xapp-fake")
    parser.add_argument("--signing-secret", default="fake-signing-secret")
    parser.add_argument("--events-url", default=None, help="deliver events over HTTP here (HTTP mode)")
    try:
        asyncio.run(_serve(parser.parse_args(argv)))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
