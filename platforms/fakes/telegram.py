"""A loopback fake of the Telegram Bot API, for tests and for trying a bot offline.

`FakeTelegram` is a small aiohttp server on 127.0.0.1 that answers
``POST /bot<token>/<method>`` the way Telegram does, so a real client (aiogram,
or anything pointed at a custom Bot API server) talks to it over real HTTP:

    async with FakeTelegram() as fake:
        bot = Bot(fake.token, session=AiohttpSession(api=TelegramAPIServer.from_base(fake.base_url)))
        fake.push_message(42, "hello")                     # a user writes to the bot
        await fake.wait_for(lambda: fake.messages["42"])   # ... until the bot has answered
        assert fake.messages["42"][0]["text"] == "hi!"

Methods: ``getMe``, ``getUpdates`` (long polling; updates stay until an ``offset``
above them confirms them, so unconfirmed ones are served again, as Telegram does),
``setWebhook``/``deleteWebhook``/``getWebhookInfo``, ``sendMessage`` (1-4096
UTF-16 code units of the text *after* entity parsing, else "message is too
long"), ``editMessageText`` ("message is not modified" for identical text and
entities), ``deleteMessage``, ``sendChatAction``, ``getFile`` (plus the download
route ``/file/bot<token>/<file_path>``), ``setMyCommands`` (refused whole, 400, for one command
Telegram refuses: a name not of 1-32 of a-z, 0-9 and _, a description not of 1-256 characters, over 100
commands)/``getMyCommands``/``deleteMyCommands``, ``sendDocument``/``sendPhoto`` (multipart uploads;
`platforms.fakes._telegram_uploads`). Other methods answer 404. With ``parse_mode=HTML`` the text
is parsed as Telegram parses it (`platforms.fakes._telegram_html`): malformed
markup answers 400 "Bad Request: can't parse entities: ...". As on Telegram, a
message keeps its first 100 entities; the formatting past them is dropped silently.

What a test reads and drives:

- ``calls``: every request as ``(method, params)``, params exactly as sent (strings;
  nested objects as JSON text). ``calls_to(name)`` filters by method.
- ``messages[chat_id]``: what the bot has in each chat, as dicts with ``message_id``,
  ``text`` (current, as Telegram shows it: after HTML parsing), ``entities`` (its
  formatting, UTF-16 offsets), ``raw`` (the text as sent), ``edits`` (every text
  it was edited to, in order), ``thread_id``, ``silent`` (sent with
  ``disable_notification``), ``parse_mode``, ``reply_to`` (the id of the message it replies
  to, or None; `platforms.fakes._telegram_replies`).
- ``said[chat_id]``: users' messages the fake served, by message id;
  ``delete_user_message(chat_id, message_id)`` deletes one (a reply to it is then refused, or
  sent as a plain message with ``allow_sending_without_reply``).
- ``commands``: the last ``setMyCommands`` list. ``webhook_url``/``webhook_secret``.
  ``pending``: the updates not yet confirmed; ``served``: the ids of those answered, in order.
- ``push_message(...)`` / ``push_update(...)`` queue an update for ``getUpdates`` (``sender_chat=``
  writes it as a chat: an anonymous admin, a channel, or with ``automatic_forward`` a linked
  channel's post, each with the stand-in ``from`` account Telegram uses);
  ``push_photo``/``push_album``/``push_document``/``push_voice`` post files into a chat (their bytes
  are then served to ``getFile`` and the file URL; ``files``, ``downloads``;
  ``cut_next_download(after)`` drops the connection midway through the next one;
  ``hold_downloads(after)`` leaves downloads unfinished until ``release_downloads()``);
  ``message_update(...)`` only builds one; ``deliver_webhook(update)`` POSTs it to
  the registered webhook (with the registered secret, another one, or none).
  ``edit_message(chat_id, message_id, text)`` queues the ``edited_message`` update of a user's edit.
- ``fail_next(method, status=429, retry_after=1)`` makes the next call fail with that
  Bot API error; ``drop_next(method)`` closes the connection without an answer.
  ``reshape_next(method, reshape)`` carries the next call out and answers ``reshape(result)``
  as its result (one a client cannot read).
  ``hold(method)`` leaves calls of ``method`` unanswered (a slow Telegram) until
  ``release(method)``; then each is answered as usual, scripted faults included.
  ``hang_next(method)`` leaves the next call unanswered for good (a request lost in a
  connection that went dead without a FIN): only the client's own timeout ends it.
- ``enforce_flood_limits(clock)`` turns on Telegram's flood control (off by default): a message
  sent or edited past one a second in a chat, 20 a minute in a group or 30 a second overall is
  refused with 429 and ``retry_after``, as Telegram refuses it; ``flood.writes`` and
  ``flood.refused`` record what it let through and the 429s it gave
  (`platforms.fakes._telegram_flood`). ``in_flight``: calls received and not yet answered, long
  polls aside (a test stepping a fake clock waits for none).
- A message lands as the Bot API places it: ``message_thread_id`` counts in a forum only (and in a private
  chat of a bot made with ``topics_in_private``: topic mode on), a reply goes
  where the message it replies to is (a forum topic, a channel post's comment thread: ``push_message``'s
  ``reply_to``), and in a supergroup that is no forum, a reply (a user's or the bot's) carries the id of its
  reply chain's first message as ``message_thread_id``; ``close_topic``/``delete_topic`` make a topic refuse
  the bot's messages (`platforms.fakes._telegram_threads`).
- ``upgrade_group(chat_id)`` turns a group into a supergroup with a new id: writes to the
  old id are then refused with ``migrate_to_chat_id``, as Telegram refuses them;
  ``push_upgrade_updates(chat_id)`` queues the two service messages Telegram posts about
  it (`platforms.fakes._telegram_upgrades`).
- ``remove_bot(chat_id)``: the chat's user blocks the bot, or its group removes it: Telegram's
  ``my_chat_member`` update is queued (status ``kicked``; with ``update=False`` none is, as one missed
  while the bot was down), and every write there (sending, editing, deleting, typing) is refused 403 with
  Telegram's words ("Forbidden: bot was blocked by the user", "Forbidden: bot was kicked from the
  supergroup chat") until ``add_bot(chat_id)``, which queues the update of a member again; ``removed``.
- ``wait_for(predicate)`` waits (10 ms steps) until a condition holds.

Run it standalone with ``python -m platforms.fakes.telegram --port 8081``; it prints
its base URL alone on the first line. Two extra routes drive it there: ``POST /fake/push_message`` with a
JSON body of `push_message`'s arguments (``{"chat_id": 42, "text": "hi"}``), and
``GET /fake/state`` for the calls and messages as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import ClientSession, web

from platforms.fakes._telegram_api import (
    ApiError,
    RawAnswer,
    Reshaped,
    drop_connection,
    error_response,
    flag,
    int_param,
    utf16,
)
from platforms.fakes._telegram_files import StoredFile, TelegramFiles  # noqa: F401  (StoredFile: re-exported)
from platforms.fakes._telegram_flood import OVERALL, PER_CHAT, PER_GROUP, FloodControl, MonotonicClock, Window
from platforms.fakes._telegram_html import HtmlError, parse_html
from platforms.fakes._telegram_replies import TelegramReplies
from platforms.fakes._telegram_threads import TelegramThreads
from platforms.fakes._telegram_upgrades import TelegramUpgrades
from platforms.fakes._telegram_uploads import MAX_UPLOAD, TelegramUploads
from platforms.fakes._waiting import wait_until

MAX_TEXT = 4096
_EMPTY = re.compile(
    "[\\s\u00a0\u1680\u180e\u2000-\u200f\u202e\u202f\u205f\u2800\u3000\ufeff\ufffc\U000e0000-\U000e007f]*")
"""A text Telegram refuses as empty: whitespace and the characters TDLib's strip_empty_characters takes for
none (td/telegram/misc.cpp: spaces such as U+2000-U+200A and U+3000, zero-width ones, U+00A0, U+FEFF, tags)."""
MAX_ENTITIES = 100
_KEEP = object()
_SECRET_RE = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
_COMMAND_RE = re.compile(r"(?<![\w/<>])/([A-Za-z0-9_]++)(?:@([A-Za-z0-9_]*+))?+(?![\w/<>])")
"""A command as TDLib's match_bot_commands finds one (td/telegram/MessageEntity.cpp): its name and a
username run as far as the characters go, so "/stop@bot, please" holds "/stop@bot"; a name over 64
characters, or a username under 3 or over 32, makes no command (checked after the match)."""
_MENTION_RE = re.compile(r"(?<![\w@])@[A-Za-z0-9_]{3,32}")
# The accounts Telegram puts in ``from`` of a message sent on behalf of a chat (``sender_chat``),
# "for backward compatibility" as the Bot API says: an anonymous group admin, someone writing as a
# channel, and a linked channel's post Telegram copies into the channel's discussion group.
GROUP_ANONYMOUS_BOT = {"id": 1087968824, "is_bot": True, "first_name": "Group", "username": "GroupAnonymousBot"}
CHANNEL_BOT = {"id": 136817688, "is_bot": True, "first_name": "Channel", "username": "Channel_Bot"}
TELEGRAM_SERVICE = {"id": 777000, "is_bot": False, "first_name": "Telegram"}
_DESCRIPTIONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden: bot was blocked by the user",
    404: "Not Found",
    409: "Conflict",
    500: "Internal Server Error",
    502: "Bad Gateway",
}


class FakeTelegram(TelegramFiles, TelegramUpgrades, TelegramUploads, TelegramReplies, TelegramThreads):
    """The fake server; see the module docstring. Not thread-safe: use it from one event loop."""

    def __init__(
        self,
        token: str = "123456:TEST-token",
        *,
        username: str = "switchboard_bot",
        first_name: str = "Switchboard",
        port: int = 0,
        topics_in_private: bool = False,
    ) -> None:
        """``topics_in_private``: the bot has topic mode on (BotFather; Bot API 9.3), so its private chats have
        topics: a user's message in one carries ``message_thread_id``, and a send's counts there."""
        self.token = token
        self.bot_user = {
            "id": int(token.split(":", 1)[0]),
            "is_bot": True,
            "first_name": first_name,
            "username": username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
            "has_topics_enabled": topics_in_private,
        }
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.messages: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
        self.said: defaultdict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
        """Users' messages in each chat, by message id (replies find them; `delete_user_message`)."""
        self.commands: list[dict[str, Any]] = []
        self.webhook_url: str | None = None
        self.webhook_secret: str | None = None
        self.pending: list[dict[str, Any]] = []
        """Updates not yet confirmed by a ``getUpdates`` offset."""
        self.served: list[int] = []
        """The ``update_id`` of every update a ``getUpdates`` answer carried, in order (repeats included)."""
        self.uploads: dict[str, tuple[str, str, bytes]] = {}
        self.files: dict[str, StoredFile] = {}
        """Files users sent (`push_photo`, `push_document`, `push_voice`), by ``file_id``."""
        self.downloads: list[str] = []
        """The ``file_path`` of every file downloaded, in order."""
        self.upgraded: dict[str, int] = {}
        self.removed: dict[str, str] = {}
        """Chats the bot was blocked in or removed from (`remove_bot`): chat id -> how Telegram refuses writes there."""
        self.closed_topics: set[tuple[str, int]] = set()
        """Forum topics an admin closed (`close_topic`): (chat id, thread id)."""
        self.deleted_topics: set[tuple[str, int]] = set()
        """Forum topics an admin deleted (`delete_topic`)."""
        """Groups upgraded to supergroups (`upgrade_group`): old chat id -> the supergroup's id."""
        self._supergroup_ids = itertools.count(1000000001)
        self._file_ids = itertools.count(1)
        self._cuts: list[int] = []
        self._held_download_start = 0
        self._port = port
        self._update_ids = itertools.count(1000)
        self._message_ids: defaultdict[str, itertools.count[int]] = defaultdict(lambda: itertools.count(1))
        self._chats: dict[str, dict[str, Any]] = {}
        self._written: dict[tuple[str, int], dict[str, Any]] = {}
        """Users' messages as the updates queued carried them last (`edit_message`), by (chat id, message id)."""
        self._faults: defaultdict[str, deque[ApiError | RawAnswer | Reshaped | bool | None]] = defaultdict(deque)
        self._held: dict[str, asyncio.Event] = {}
        self.flood: FloodControl | None = None
        """Telegram's flood control, once `enforce_flood_limits` turned it on."""
        self.in_flight = 0
        """Bot API calls received and not answered yet, long polls aside: a test running a fake clock lets none of
        it pass while one is under way, or the call would reach the flood limits later than it left the client."""
        self._changed = asyncio.Event()
        self._poller: object | None = None
        self._closing = False
        self._runner: web.AppRunner | None = None
        self._client: ClientSession | None = None
        self.base_url = ""
        self._methods: dict[str, Callable[[dict[str, Any]], Any]] = {
            "getme": self._get_me,
            "getupdates": self._get_updates,
            "setwebhook": self._set_webhook,
            "deletewebhook": self._delete_webhook,
            "getwebhookinfo": self._get_webhook_info,
            "sendmessage": self._send_message,
            "editmessagetext": self._edit_message_text,
            "deletemessage": self._delete_message,
            "getfile": self._get_file,
            "sendchataction": self._send_chat_action,
            "senddocument": self._send_document,
            "sendphoto": self._send_photo,
            "setmycommands": self._set_my_commands,
            "getmycommands": self._get_my_commands,
            "deletemycommands": self._delete_my_commands,
        }

    # -- lifecycle -------------------------------------------------------------

    def app(self) -> web.Application:
        # Uploads past aiohttp's 1 MB default reach the method, which answers as Telegram does.
        app = web.Application(client_max_size=MAX_UPLOAD + 1024 * 1024)
        app.router.add_post("/bot{token}/{method}", self._handle)
        app.router.add_get("/bot{token}/{method}", self._handle)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        app.router.add_post("/fake/push_message", self._control_push)
        app.router.add_get("/fake/state", self._control_state)
        return app

    async def start(self) -> FakeTelegram:
        self._runner = web.AppRunner(self.app(), handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    async def close(self) -> None:
        """Wake every long poll (they answer ``[]``), answer held calls, and stop serving. Idempotent."""
        self._closing = True
        self._wake()
        for method in list(self._held):
            self.release(method)
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeTelegram:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- driving it from a test --------------------------------------------------

    def message_update(
        self,
        chat_id: int | str,
        text: str,
        *,
        user_id: int | None = None,
        username: str | None = "alice",
        chat_type: str = "private",
        reply_to_bot: bool = False,
        entities: list[dict[str, Any]] | None = None,
        thread_id: int | None = None,
        sender_chat: int | None = None,
        automatic_forward: bool = False,
        reply_to: int | None = None,
    ) -> dict[str, Any]:
        """Build (not queue) an update with a user's message. ``entities=None`` derives them
        as Telegram does: ``bot_command``s and ``mention``s, UTF-16 offsets;
        pass ``[]`` for none. ``user_id`` defaults to the chat id in private chats.
        ``reply_to``: the id of the message (a user's the fake served, or the bot's) it replies to, which
        puts it in that message's thread, as does ``reply_to_bot``: in a supergroup that is no forum, the thread
        of its reply chain (``message_thread_id``: the chain's first message), a comment under a channel post
        replying to the post's copy in the discussion group (`platforms.fakes._telegram_threads`). With a
        ``thread_id`` of a forum other than that message's, it is written in the topic ``thread_id`` and replies
        across topics, as Telegram shows that: ``external_reply``, no ``reply_to_message``.

        ``sender_chat`` sends it on behalf of a chat, as Telegram shows it: the group's own id is
        an anonymous admin (``from`` is GroupAnonymousBot), another id a channel someone writes as
        (``from`` is Channel_Bot); with ``automatic_forward`` it is that channel's post, copied
        into its discussion group (``from`` is Telegram, 777000)."""
        cid = int(chat_id)
        chat = self._chat(cid, chat_type, thread_id is not None and chat_type != "private")  # a private one: no forum
        uid = user_id if user_id is not None else (cid if chat_type == "private" else 1)
        user = {"id": uid, "is_bot": False, "first_name": (username or "User").title()}
        if username:
            user["username"] = username
        message: dict[str, Any] = {
            "message_id": next(self._message_ids[str(cid)]),
            "date": int(time.time()),
            "chat": chat,
            "from": user,
            "text": text,
        }
        if sender_chat is not None:
            anonymous = sender_chat == cid
            message["sender_chat"] = chat if anonymous else self._chat(sender_chat, "channel")
            message["from"] = TELEGRAM_SERVICE if automatic_forward else GROUP_ANONYMOUS_BOT if anonymous else CHANNEL_BOT
            if automatic_forward:
                origin = {"type": "channel", "chat": message["sender_chat"], "message_id": 1, "date": message["date"]}
                message.update(is_automatic_forward=True, forward_origin=origin)
        if entities is None:
            entities = _derive_entities(text)
        if entities:
            message["entities"] = entities
        if thread_id is not None:
            message["message_thread_id"] = thread_id
            message["is_topic_message"] = True
        replied = None
        if reply_to is not None:
            replied = self._replied({"reply_to_message_id": reply_to}, cid)
        if reply_to_bot:
            sent = self.messages[str(cid)]
            replied = self._bot_reply_target(cid, sent[-1]["message_id"]) if sent else {
                "message_id": 1, "text": "...", "date": int(time.time()), "chat": chat, "from": self.bot_user}
        if replied is not None and self.replies_across_topics(cid, thread_id, replied):
            message["external_reply"] = self._external_reply(cid, replied)
        elif replied is not None:
            message["reply_to_message"] = replied
            if (thread := self.thread_of_reply(cid, replied)) is not None:
                message.update(self._thread_fields(cid, thread))
        return {"update_id": next(self._update_ids), "message": message}

    def push_update(self, update: Mapping[str, Any]) -> int:
        """Queue a raw update for ``getUpdates``; an ``update_id`` is added if missing."""
        queued = dict(update)
        queued.setdefault("update_id", next(self._update_ids))
        self._heard(queued)
        for kind in ("message", "edited_message"):
            if isinstance(message := queued.get(kind), Mapping) and "message_id" in message and "chat" in message:
                self._written[(str(message["chat"]["id"]), int(message["message_id"]))] = dict(message)
        self.pending.append(queued)
        self._wake()
        return int(queued["update_id"])

    def push_message(self, chat_id: int | str, text: str, **kw: Any) -> int:
        """A user writes ``text``; returns the update id. Keywords as `message_update`."""
        return self.push_update(self.message_update(chat_id, text, **kw))

    def edit_message(self, chat_id: int | str, message_id: int, text: str, *,
                     entities: list[dict[str, Any]] | None = None) -> int:
        """The user edits their message ``message_id`` (one an update queued here carried): queues Telegram's
        ``edited_message`` update, the message whole (the message it replies to included) with ``text`` as its
        text, or its caption if it has one, ``entities`` (as `message_update`'s: None derives them anew), and
        ``edit_date``; returns the update id."""
        message = dict(self._written[(str(chat_id), int(message_id))])
        field, marks = ("caption", "caption_entities") if "caption" in message else ("text", "entities")
        message.pop(marks, None)
        message.update({field: text, "edit_date": int(time.time())})
        if entities := _derive_entities(text) if entities is None else entities:
            message[marks] = entities
        return self.push_update({"edited_message": message})

    async def deliver_webhook(self, update: Mapping[str, Any], *, secret: Any = _KEEP) -> int:
        """POST ``update`` to the registered webhook URL, as Telegram does, and return the
        HTTP status. ``secret`` defaults to the registered one; ``None`` sends no header."""
        if self.webhook_url is None:
            raise RuntimeError("no webhook is registered (setWebhook was not called)")
        secret = self.webhook_secret if secret is _KEEP else secret
        headers = {} if secret is None else {"X-Telegram-Bot-Api-Secret-Token": secret}
        self._heard(update)
        if self._client is None:
            self._client = ClientSession()
        async with self._client.post(self.webhook_url, json=update, headers=headers) as resp:
            await resp.read()
            return resp.status

    def remove_bot(self, chat_id: int | str, *, update: bool = True) -> int | None:
        """The user of the private chat ``chat_id`` blocks the bot, or the group removes it: writes there are refused
        403 until `add_bot`. With ``update``, queues the ``my_chat_member`` update Telegram sends (returns its id)."""
        chat = self._chat(int(chat_id))
        self.removed[str(chat_id)] = ("Forbidden: bot was blocked by the user" if chat["type"] == "private"
                                      else f"Forbidden: bot was kicked from the {chat['type']} chat")
        return self._membership_update(chat, {"status": "kicked", "user": self.bot_user, "until_date": 0}) \
            if update else None

    def add_bot(self, chat_id: int | str, *, update: bool = True) -> int | None:
        """The user unblocks the bot, or the group adds it back: writes there work again. With ``update``, queues
        the ``my_chat_member`` update of a member (returns its id)."""
        self.removed.pop(str(chat_id), None)
        return self._membership_update(self._chat(int(chat_id)), {"status": "member", "user": self.bot_user}) \
            if update else None

    def _membership_update(self, chat: dict[str, Any], member: dict[str, Any]) -> int:
        old = {"status": "member", "user": self.bot_user} if member["status"] != "member" else \
            {"status": "kicked", "user": self.bot_user, "until_date": 0}
        someone = {"id": chat["id"] if chat["type"] == "private" else 1, "is_bot": False, "first_name": "User"}
        return self.push_update({"my_chat_member": {"chat": chat, "from": someone, "date": int(time.time()),
                                                    "old_chat_member": old, "new_chat_member": member}})

    def fail_next(
        self,
        method: str,
        status: int = 429,
        retry_after: int | None = None,
        description: str | None = None,
        *,
        body: str | None = None,
        content_type: str = "text/html",
    ) -> None:
        """Make the next call of ``method`` answer this error (calls queue up in order).
        A 429 carries ``parameters.retry_after`` (default 1 s). ``body``: the answer is this text as
        ``content_type`` instead of the Bot API's JSON (a proxy's page, a body cut short), the call not
        carried out."""
        if body is not None:
            self._faults[method.lower()].append(RawAnswer(status, body, content_type))
            return
        if status == 429:
            retry_after = 1 if retry_after is None else retry_after
            description = description or f"Too Many Requests: retry after {retry_after}"
        description = description or _DESCRIPTIONS.get(status, "Error")
        self._faults[method.lower()].append(ApiError(status, description, retry_after))

    def drop_next(self, method: str, *, after_processing: bool = False) -> None:
        """Make the next call of ``method`` close the connection without any answer. With
        ``after_processing`` the call takes effect first (the message is sent, the client
        never learns it): the case that makes retries send duplicates."""
        self._faults[method.lower()].append(after_processing)

    def reshape_next(self, method: str, reshape: Callable[[Any], Any]) -> None:
        """Carry the next call of ``method`` out as usual, and answer ``{"ok": true, "result": reshape(result)}``:
        a result the client may not read (a newer Bot API's, a server's that keeps to it loosely), the call
        made all the same."""
        self._faults[method.lower()].append(Reshaped(reshape))

    def hang_next(self, method: str) -> None:
        """Never answer the next call of ``method``, nor close its connection; later calls are
        answered as usual."""
        self._faults[method.lower()].append(None)

    def hold(self, method: str) -> None:
        """Leave calls of ``method`` (this one's and later ones) unanswered until `release`."""
        self._held.setdefault(method.lower(), asyncio.Event())

    def release(self, method: str) -> None:
        """Answer the held calls of ``method``, and later ones at once again."""
        held = self._held.pop(method.lower(), None)
        if held is not None:
            held.set()

    def enforce_flood_limits(self, clock: MonotonicClock | None = None, *, per_chat: Window = PER_CHAT,
                             per_group: Window = PER_GROUP, overall: Window = OVERALL) -> FloodControl:
        """Refuse writes past Telegram's flood limits with 429 and ``retry_after``, as Telegram
        does (`platforms.fakes._telegram_flood`), measuring time on ``clock`` (a test's fake
        clock; the real monotonic clock by default). Returns the `FloodControl`, also `flood`,
        whose ``writes`` and ``refused`` record what it let through and what it refused."""
        self.flood = FloodControl(clock or time, per_chat=per_chat, per_group=per_group, overall=overall)
        return self.flood

    def calls_to(self, method: str) -> list[dict[str, Any]]:
        return [params for name, params in self.calls if name.lower() == method.lower()]

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Wait until ``predicate()`` is truthy and return its value; TimeoutError after ``timeout``."""
        return await wait_until(predicate, timeout, poll=0.01)

    # -- HTTP --------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        # A getUpdates long poll waits on the real clock for updates to come: no call on its way to the limits.
        counted = request.match_info["method"].lower() != "getupdates"
        self.in_flight += counted
        try:
            return await self._answer(request)
        finally:
            self.in_flight -= counted

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self.token:
            return error_response(ApiError(401, "Unauthorized"))
        name = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        uploads: dict[str, tuple[str, str, bytes]] = {}
        if request.content_type == "application/json":
            params.update(await request.json())
        elif request.can_read_body:
            form = await request.post()
            params.update({k: v if isinstance(v, str) else f"<file {v.filename}>" for k, v in form.items()})
            uploads = {k: (v.filename, v.content_type, v.file.read())
                       for k, v in form.items() if not isinstance(v, str)}
        self.calls.append((name, params))
        method = self._methods.get(name.lower())
        if method is None:
            return error_response(ApiError(404, "Not Found"))
        held = self._held.get(name.lower())
        if held is not None:
            await held.wait()
        faults = self._faults.get(name.lower())
        fault = faults.popleft() if faults else ...
        if fault is None:
            await asyncio.Event().wait()  # until the fake closes
        if isinstance(fault, ApiError):
            return error_response(fault)
        if isinstance(fault, RawAnswer):
            return fault.response()
        if fault is False:
            return drop_connection(request)
        write = None
        try:
            if self.flood is not None:
                write = self.flood.admit(name, params)
            self.uploads = uploads  # read by the method, before any await
            result = method(params)
            if asyncio.iscoroutine(result):
                result = await result
        except ApiError as exc:
            if write is not None:
                self.flood.withdraw(write)  # type: ignore[union-attr]
            return error_response(exc)
        if fault is True:
            return drop_connection(request)
        if isinstance(fault, Reshaped):
            result = fault.reshape(result)
        return web.json_response({"ok": True, "result": result})

    async def _control_push(self, request: web.Request) -> web.Response:
        body = await request.json()
        update_id = self.push_message(body.pop("chat_id"), body.pop("text"), **body)
        return web.json_response({"ok": True, "result": {"update_id": update_id}})

    async def _control_state(self, request: web.Request) -> web.Response:
        state = {"calls": self.calls, "messages": self.messages, "commands": self.commands, "pending": self.pending}
        return web.json_response(state)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _chat(self, chat_id: int, chat_type: str | None = None, is_forum: bool = False) -> dict[str, Any]:
        chat = self._chats.get(str(chat_id))
        if chat is None or chat_type is not None:
            kind = chat_type or ("private" if chat_id > 0 else "supergroup")
            chat = {"id": chat_id, "type": kind}
            title = f"Channel {chat_id}" if kind == "channel" else f"Group {chat_id}"
            chat.update({"first_name": "User"} if kind == "private" else {"title": title})
            if is_forum or (self._chats.get(str(chat_id)) or {}).get("is_forum"):  # General's messages too
                chat["is_forum"] = True
            self._chats[str(chat_id)] = chat
        return chat

    def _bot_message(self, params: dict[str, Any], record: dict[str, Any], **extra: Any) -> dict[str, Any]:
        message = {
            "message_id": record["message_id"],
            "date": record["date"],
            "chat": self._chat(int_param(params, "chat_id")),
            "from": self.bot_user,
            "text": record["text"],
            **({"entities": record["entities"]} if record["entities"] else {}),
            **extra,
            **self._thread_fields(int_param(params, "chat_id"), record["thread_id"]),
        }
        return message

    def _writable_chat(self, params: dict[str, Any]) -> int:
        chat_id = super()._writable_chat(params)
        self._check_member(chat_id)
        return chat_id

    def _check_editable(self, params: dict[str, Any]) -> None:
        super()._check_editable(params)
        self._check_member(int_param(params, "chat_id"))

    def _check_member(self, chat_id: int) -> None:
        if (refusal := self.removed.get(str(chat_id))) is not None:
            raise ApiError(403, refusal)

    def _find(self, params: dict[str, Any]) -> dict[str, Any] | None:
        chat, message_id = str(int_param(params, "chat_id")), int_param(params, "message_id")
        return next((m for m in self.messages.get(chat, ()) if m["message_id"] == message_id), None)

    # -- Bot API methods -----------------------------------------------------------

    def _get_me(self, params: dict[str, Any]) -> dict[str, Any]:
        return self.bot_user

    async def _get_updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        if self.webhook_url:
            raise ApiError(409, "Conflict: can't use getUpdates method while webhook is active; "
                           "use deleteWebhook to delete the webhook first")  # fmt: skip
        offset, limit = int_param(params, "offset", 0), int_param(params, "limit", 100)
        if offset > 0:
            self.pending = [u for u in self.pending if u["update_id"] >= offset]
        # As on Telegram, a new poll ends the one still waiting (a second bot instance).
        me = self._poller = object()
        self._wake()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + int_param(params, "timeout", 0)
        while True:
            if self._poller is not me:
                raise ApiError(409, "Conflict: terminated by other getUpdates request; "
                               "make sure that only one bot instance is running")  # fmt: skip
            if self.pending or self._closing or loop.time() >= deadline:
                self.served += [u["update_id"] for u in self.pending[:limit]]
                return self.pending[:limit]
            changed = self._changed
            try:
                await asyncio.wait_for(changed.wait(), deadline - loop.time())
            except TimeoutError:
                pass

    def _set_webhook(self, params: dict[str, Any]) -> bool:
        secret = params.get("secret_token")
        if secret is not None and not _SECRET_RE.match(secret):
            raise ApiError(400, "Bad Request: secret token contains unallowed characters")
        if not params.get("url"):
            return self._delete_webhook(params)
        self.webhook_url, self.webhook_secret = params["url"], secret
        if flag(params.get("drop_pending_updates")):
            self.pending.clear()
        return True

    def _delete_webhook(self, params: dict[str, Any]) -> bool:
        self.webhook_url = self.webhook_secret = None
        if flag(params.get("drop_pending_updates")):
            self.pending.clear()
        return True

    def _get_webhook_info(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"url": self.webhook_url or "", "has_custom_certificate": False, "pending_update_count": len(self.pending)}

    def _parsed(self, params: dict[str, Any], *, editing: bool) -> tuple[str, list[dict[str, Any]]]:
        """The text Telegram shows and its entities, as Telegram derives them from the request."""
        raw = str(params.get("text", ""))
        if params.get("parse_mode") == "HTML":
            try:
                text, entities = parse_html(raw)
            except HtmlError as exc:
                raise ApiError(400, f"Bad Request: can't parse entities: {exc}") from None
        else:
            text = raw
            entities = json.loads(params["entities"]) if params.get("entities") else []
        if _EMPTY.fullmatch(text):
            raise ApiError(400, "Bad Request: text must be non-empty" if editing else "Bad Request: message text is empty")
        if utf16(text) > MAX_TEXT:  # Telegram counts the text after entity parsing
            raise ApiError(400, "Bad Request: MESSAGE_TOO_LONG" if editing else "Bad Request: message is too long")
        return text, entities[:MAX_ENTITIES]  # Telegram ignores the formatting past them, without a word

    def _send_message(self, params: dict[str, Any]) -> dict[str, Any]:
        text, entities = self._parsed(params, editing=False)
        chat_id = self._writable_chat(params)
        replied = self._replied(params, chat_id)
        thread_id = self._landing(params, chat_id, replied)
        record = {
            "message_id": next(self._message_ids[str(chat_id)]),
            "date": int(time.time()),
            "text": text,
            "entities": entities,
            "raw": str(params.get("text", "")),
            "edits": [],
            "thread_id": thread_id,
            "silent": flag(params.get("disable_notification")),
            "parse_mode": params.get("parse_mode"),
            "reply_to": None if replied is None else replied["message_id"],
        }
        self.messages[str(chat_id)].append(record)
        return self._bot_message(params, record, **({} if replied is None else {"reply_to_message": replied}))

    def _edit_message_text(self, params: dict[str, Any]) -> dict[str, Any]:
        self._check_editable(params)
        record = self._find(params)
        if record is None:
            raise ApiError(400, "Bad Request: message to edit not found")
        text, entities = self._parsed(params, editing=True)
        if (text, entities) == (record["text"], record["entities"]):
            raise ApiError(400, "Bad Request: message is not modified: specified new message content and "
                           "reply markup are exactly the same as a current content and reply markup of the message")  # fmt: skip
        record.update(text=text, entities=entities, raw=str(params.get("text", "")), parse_mode=params.get("parse_mode"))
        record["edits"].append(text)
        return self._bot_message(params, record, edit_date=int(time.time()))

    def _delete_message(self, params: dict[str, Any]) -> bool:
        self._writable_chat(params)
        record = self._find(params)
        if record is None:
            raise ApiError(400, "Bad Request: message to delete not found")
        self.messages[str(int_param(params, "chat_id"))].remove(record)
        return True

    def _send_chat_action(self, params: dict[str, Any]) -> bool:
        self._check_action_topic(params, self._writable_chat(params))
        if not params.get("action"):
            raise ApiError(400, "Bad Request: wrong parameter action in request")
        return True

    def _set_my_commands(self, params: dict[str, Any]) -> bool:
        commands = params.get("commands", "[]")
        commands = json.loads(commands) if isinstance(commands, str) else list(commands)
        _check_commands(commands)
        self.commands = commands
        return True

    def _get_my_commands(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        return self.commands

    def _delete_my_commands(self, params: dict[str, Any]) -> bool:
        self.commands = []
        return True


def _check_commands(commands: list[dict[str, Any]]) -> None:
    """Refuse the whole list, as Telegram does, for one command it will not take: TDLib's set_commands
    (td/telegram/BotCommand.cpp) trims name and description and drops a leading "/", then wants a name of 1-32
    characters and a description of 1-256; Telegram's servers want the name of a-z, 0-9 and _, 100 at most."""
    if len(commands) > 100:
        raise ApiError(400, "Bad Request: BOT_COMMANDS_TOO_MUCH")
    for command in commands:
        name, description = str(command.get("command", "")).strip(), str(command.get("description", "")).strip()
        name = name.removeprefix("/")
        if not name:
            raise ApiError(400, "Bad Request: command must be non-empty")
        if len(name) > 32:
            raise ApiError(400, "Bad Request: command length must not exceed 32")
        if not description:
            raise ApiError(400, "Bad Request: command description must be non-empty")
        if len(description) > 256:
            raise ApiError(400, "Bad Request: command description length must not exceed 256")
        if not re.fullmatch(r"[a-z0-9_]+", name):
            raise ApiError(400, "Bad Request: BOT_COMMAND_INVALID")


def _derive_entities(text: str) -> list[dict[str, Any]]:
    """The entities Telegram's servers add to a plain text message: offsets in UTF-16 units."""
    commands = [m for m in _COMMAND_RE.finditer(text) if len(m[1]) <= 64 and (m[2] is None or 3 <= len(m[2]) <= 32)]
    found = [*(("bot_command", m) for m in commands), *(("mention", m) for m in _MENTION_RE.finditer(text))]
    return [{"type": kind, "offset": utf16(text[: m.start()]), "length": utf16(m.group())}
            for kind, m in sorted(found, key=lambda kind_match: kind_match[1].start())]


async def _serve(port: int, token: str, username: str) -> None:
    async with FakeTelegram(token, username=username, port=port) as fake:
        print(fake.base_url, flush=True)  # alone on the first line, for scripts
        print(f"Fake Telegram Bot API: token {token}, bot @{username}; Ctrl-C stops it.", flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m platforms.fakes.telegram", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8081, help="port on 127.0.0.1 (0 picks a free one)")
    parser.add_argument("--token", default="123456:TEST-token", help="the only bot token it accepts")
    parser.add_argument("--username", default="switchboard_bot", help="the bot's @username (getMe)")
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve(args.port, args.token, args.username))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
