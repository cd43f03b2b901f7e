"""Telegram adapter on aiogram 3: Bot API updates in, plain-text messages out.

Which messages reach the gateway: in private chats, every text message; in groups,
only commands, messages that mention the bot (a ``mention`` of @botname, a
``text_mention`` of the bot, or @botname in the text) and replies to the bot's own
messages. ``/stop@botname args`` arrives as ``/stop args``; a command addressed to
another bot is ignored, and so is a bare one the gateway does not serve (``/weather``,
another bot's) unless the message is addressed to the bot otherwise. A message written as a
chat (``sender_chat``: an anonymous admin as the group, someone as their channel) is from that
chat, its id the user id (a group's own id, also once it became a supergroup); a linked channel's
post Telegram copies into the group is not for the bot. Photos, documents, voice messages, audio and video arrive as `Attachment`s
(`platforms.telegram_files`), with the caption as the text; an album (one update per item, maybe
over several polls or webhook requests) is one `Inbound` (`platforms.telegram_albums`), its captions the
text, its first update id the event id, every item's update id its aliases. `download` fetches one
through ``getFile`` and refuses files over ``max_attachment_bytes`` (Telegram itself serves
bots files up to 20 MB).
``Inbound.event_id`` is ``<bot id>:<update_id>`` (`_event_id`), and so are an album's: the gateway inbox drops
repeats, and Telegram numbers each bot's updates on its own. Those a version before recorded by the bare update id
are still repeats after the upgrade (`gateway.store.inbox`).
A user's edit of their message (``edited_message``, asked for with ``message``) goes to the gateway
(`HearsEdits`), by the chat, thread and message id the message was handed over with: a message still
waiting for its turn is answered as edited; any other edit changes nothing and starts no turn. A message a
webhook delivers after its edit comes as edited (`platforms.telegram_webhook.EarlyEdits`), also after a restart
between the two: the edit is kept in the gateway's store (`bind_last_seen`), which Telegram's adapter uses for
nothing else (Telegram serves what came while the gateway was down: there is no catch-up to make).
The bot blocked by a user or removed from a group (``my_chat_member``, also asked for), or a write Telegram refuses
as such, tells the gateway once that it can no longer write to the chat (`LosesChats`,
`platforms.telegram_membership`): it stops the chat's work. While polling, beside the later updates (`_on_membership`);
one older than an update of the chat's already handled (a webhook's, delivered late) is passed over. A write refused
as its forum topic is deleted tells the same of that topic alone (`_into_topic`).

Receiving, and what happens around restarts:

- polling (default): aiogram's ``Dispatcher`` long-polls ``getUpdates``. It confirms an
  update only with the ``offset`` of its *next* getUpdates call, and we run it with
  ``handle_as_tasks=False``, so that next call is made only after the sink has returned
  for every update of the batch (but a ``my_chat_member``'s stop: `_on_membership`). An update the gateway has
  not recorded is therefore never confirmed: when the sink raises, the update is handed over again (after 0.5 s,
  doubling to 5 s) until it is recorded, and polling waits meanwhile. One that was
  recorded but not yet confirmed when the process stopped is served again after a
  restart (at-least-once; the inbox dedups it). Errors while
  polling (network, 5xx) are logged by aiogram, which backs off (1 s to 5 s) and keeps
  polling; `connection` says how polling fares (`platforms.telegram_polling`: a 401 stops
  it, a 409 from a second poller or a webhook is ``down`` while it lasts; in either mode, so
  is any call answered 401, until one succeeds). ``start``
  deletes any webhook first (without dropping pending updates): Telegram refuses
  getUpdates while one is set. Another's webhook, so taken away, is warned of
  (`platforms.telegram_webhook.replaced`), as is one a webhook-mode start replaces.
- webhook: ``start`` registers ``webhook_url`` with ``secret_token``; ``web_routes()``
  serves its path. A request without the right ``X-Telegram-Bot-Api-Secret-Token``
  gets 401 and nothing runs. The answer (200) is given after the sink returned, so an
  update the gateway could not record (its storage refused it: 500; the adapter stopping: 503)
  is delivered again by Telegram; one the adapter or the gateway failed on otherwise is logged
  and dropped, answered 200 (`platforms.telegram_webhook`), as polling drops it. In either mode a
  command the gateway failed on so is answered that it could not be handled (`NOT_HANDLED`). Without a configured
  ``webhook_secret`` a random one is made per process. ``stop`` leaves the webhook
  registered: Telegram keeps the updates until we are back.

Sending: the gateway hands over Markdown; it is rendered to Telegram's HTML
(`platforms.formatting.telegram_html`) and sent with ``parse_mode=HTML``, or as plain
text when it has nothing to format (then both are the same). `measure` counts what
Telegram counts: the UTF-16 length of the text after entity parsing, or of the
Markdown itself if that is longer, so a part also fits when sent as plain text; and
no part holds more than the 100 entities Telegram reads (it ignores the formatting
past them, links included, without a word). If
Telegram answers "can't parse entities", the same part is sent once more, as plain
text (the Markdown as written): an answer is never lost to formatting. No other
error does that. ``parse_mode=None`` sends everything as plain text. Every SDK
error becomes a `DeliveryError` in `platforms.telegram_errors`, the one place, and is logged with
the method and the chat (`platforms.telegram_calls`; at DEBUG where the gateway says what became of
the call: a part, a file); aiogram never retries a 429 itself, the gateway does with
``RateLimited.retry_after``. The outbox paces each chat; the bot's overall rate (about 30 messages a
second, whatever the chats) is kept here: every message sent or edited waits its turn (`_paced`).
An answer aiogram cannot read whole (a message it quotes lacks a field) is read as far as it can be
(`platforms.telegram_updates.read_answers`): Telegram made the message.
One that says the send was done (``ok``) but names no ``message_id`` (a broken proxy, a body cut short)
is a send all the same: sent again, the chat would show it twice. Its `Sent` id starts with `NO_ID`,
which `edit` and `delete` refuse (`EditUnsupported`): the gateway sends a card's next state anew.

A group upgraded to a supergroup gets a new chat id: the adapter follows it there, and hands
the supergroup's messages over under the old one (`platforms.telegram_supergroups`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import re
import secrets
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, Literal
from urllib.parse import urlsplit

from aiogram import Bot, Dispatcher
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import ClientDecodeError
from aiogram.methods import EditMessageText, GetUpdates, SendDocument, SendMessage, SendPhoto, TelegramMethod
from aiogram.types import BotCommand, ChatMemberUpdated, FSInputFile, Message, ReplyParameters, Update
from aiohttp import web

from platforms import telegram_files, telegram_inbound, telegram_updates, telegram_webhook
from platforms.base import (
    DEFAULT_MAX_ATTACHMENT_BYTES,
    Attachment,
    BadRequest,
    ChatLost,
    ChatMoved,
    CommandSpec,
    DeliveryError,
    DisplayTier,
    EditUnsupported,
    Inbound,
    InboundSink,
    MessageEdited,
    NotFound,
    Outbound,
    OutboundFile,
    SeenLookup,
    SeenRecorder,
    Sent,
    utf16_length,
)
from platforms.connection import NO_CONNECTION, ConnectionState, TokenWatch
from platforms.formatting import blank, telegram_html
from platforms.not_recorded import not_handled, storage_refusal
from platforms.pacing import AccountRate, Pacing
from platforms.repeated_warnings import RepeatedWarnings
from platforms.telegram_albums import Album, AlbumGather, AlbumHold, captions_of
from platforms.telegram_calls import BotCalls
from platforms.telegram_errors import BotApiSession, GroupUpgraded
from platforms.telegram_membership import Membership, gone
from platforms.telegram_moves import UpgradeWait
from platforms.telegram_polling import PollWatch
from platforms.telegram_supergroups import Supergroups, quotable_in, upgrade_of, written_in
from platforms.telegram_threads import CommentThreads
from platforms.telegram_webhook import EarlyEdits, NotTaken, WebhookEndpoint

log = logging.getLogger(__name__)

TOKEN_FIX = ("it was revoked or replaced in BotFather; set platforms.telegram.token to the current token and"
             " restart")

GROUP_PACING = Pacing(call_interval=3.0, edit_interval=1.0)
PRIVATE_PACING = Pacing(call_interval=1.0, edit_interval=1.0)
"""Telegram's bot FAQ: about one message a second in any chat (edits count), 20 a minute in a group."""
BOT_WRITES_PER_SECOND = 30
"""Telegram's bot FAQ: about 30 messages a second overall, whatever the chats (`AccountRate`)."""
_WRITES = (SendMessage, EditMessageText, SendPhoto, SendDocument)
"""The calls Telegram counts against the bot's overall rate: a message sent or changed."""

SINK_RETRY_FIRST, SINK_RETRY_MAX = 0.5, 5.0
"""While polling, how long to wait before handing an update the gateway failed to record over again."""
NOT_HANDLED_SECONDS = 10.0
"""How long the answer to a command the gateway failed on may hold up the updates after it."""
START_TIMEOUT = 30.0
"""Seconds each Bot API call of the start (getMe first) is given, rather than the bot's request timeout (60 s): an
``api_base`` that took the connection and never answered (a wrong proxy, a captive portal, a hung server) held the
start a minute without a word. Polling's long getUpdates is no call of the start."""

UPLOAD_LIMIT = 50 * 1000 * 1000
PHOTO_LIMIT = 10 * 1000 * 1000
SLOWEST_UPLOAD = 50_000
"""Bytes a second an upload is given time for, on top of the bot's request timeout: aiogram bounds
every call by that timeout (60 s) whole, upload included, so over a slow uplink a large file was
cut off midway, and tried again, and cut off again, for as long as the outbox retried (50 MB
needs about 7 Mbit/s to go in 60 s). At this rate a 50 MB file has about 17 minutes more."""
_PICTURES = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n")
"""JPEG and PNG: what Telegram takes as a photo and shows in the chat."""
REPLY_GONE = "message to be replied not found"
"""Telegram's refusal of a send quoting a message that is not there, without ``allow_sending_without_reply``."""
NO_ID = "no-id:"
"""How the id of a message begins that Telegram made but whose answer named no ``message_id``: unique
(a uuid follows), never a number, so nothing edits, deletes or quotes another message under it."""


class TelegramAdapter:
    """One bot. ``bot`` replaces the aiogram Bot built from ``token`` and ``api_base``
    (a seam for tests); either way `stop` closes its HTTP session. ``bot_rate`` spaces every message
    the bot sends or edits, in all its chats (`BOT_WRITES_PER_SECOND` by default; a seam for tests).
    ``start_timeout`` bounds each call of `start` (`START_TIMEOUT`)."""

    name = "telegram"
    tier = DisplayTier(interim_assistant_messages=True, long_running_notifications=True, messaging=True,
                       progress="card")
    text_limit = 4096
    """Telegram counts UTF-16 code units (see `measure`)."""
    typing_interval = 4.0
    """Telegram shows "typing" for 5 s, or until the bot's next message."""
    typing_lapses = True
    caption_limit = 1024
    """A file's caption, in UTF-16 units after entity parsing, like a message's text."""

    def __init__(
        self,
        token: str,
        *,
        api_base: str = "https://api.telegram.org",
        mode: Literal["polling", "webhook"] = "polling",
        webhook_url: str | None = None,
        webhook_secret: str | None = None,
        bot: Bot | None = None,
        parse_mode: Literal["HTML"] | None = "HTML",
        polling_timeout: int = 30,
        max_attachment_bytes: int = DEFAULT_MAX_ATTACHMENT_BYTES,
        bot_rate: AccountRate | None = None,
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        if mode not in ("polling", "webhook"):
            raise ValueError(f"telegram mode must be 'polling' or 'webhook', not {mode!r}")
        if mode == "webhook" and not webhook_url:
            raise ValueError("telegram webhook mode needs webhook_url")
        if parse_mode not in ("HTML", None):
            raise ValueError(f"telegram parse_mode must be 'HTML' or None, not {parse_mode!r}")
        # Its answers read with their status: a proxy's refusal is no outage (`telegram_errors.BotApiSession`).
        self.bot = bot or Bot(token, session=BotApiSession(api=TelegramAPIServer.from_base(api_base)))
        self.mode = mode
        self.webhook_url = webhook_url
        self._secret = webhook_secret or secrets.token_urlsafe(32)
        self._typing_failures = RepeatedWarnings(log)
        self._parse_mode = parse_mode
        self._polling_timeout, self._start_timeout = polling_timeout, start_timeout
        self.max_attachment_bytes = max_attachment_bytes
        self._sink: InboundSink | None = None
        self._bot_id = self.bot.id
        self._username = ""
        self._command_names: frozenset[str] = frozenset()
        """The gateway's commands and aliases, lower case: the bare commands heard in groups."""
        self._polling: asyncio.Task[None] | None = None
        self._polling_started = asyncio.Event()
        # No per-user FSM state: the adapter keeps none, and aiogram's in-memory storage would keep a
        # record of every (chat, user) it ever sees, for good.
        self._dp = Dispatcher(disable_fsm=True)
        self._dp.message.register(self._on_message)
        self._dp.edited_message.register(self._on_edited)
        self._dp.my_chat_member.register(self._on_membership)
        self._membership = Membership()
        self._edits: MessageEdited | None = None
        self._early_edits = EarlyEdits()
        self._dp.startup.register(self._on_polling_started)
        self.albums = AlbumHold()
        """Polling: the albums whose items are still coming."""
        self.webhook_albums = AlbumGather()
        """Webhook: the albums whose items are still coming."""
        self._skipped_to = 0
        """Polling: the offset that confirms the updates skipped as unreadable."""
        self.upgrade_wait = UpgradeWait()
        """Webhook mode: holds a supergroup's message that may have come before its upgrade's."""
        self._moves = Supergroups(self.upgrade_wait)
        self._comments = CommentThreads()
        self._webhook = WebhookEndpoint(self._secret, self.bot, self._dp, lambda: self._sink is not None)
        self._poll_watch = PollWatch(self.bot.token, polling_timeout, self._dp.stop_polling)
        self._token_watch = TokenWatch("telegram", "Telegram", TOKEN_FIX)
        """Calls refused 401: a webhook has no connection to show it, and polling may not have met it yet."""
        self._calls = BotCalls(self.bot, parse_mode, self._token_watch, refused=self._refused_in)
        # A send Telegram made, but whose answer aiogram cannot read, would be made again at every retry.
        self.bot.session.middleware(telegram_updates.read_answers)
        self._bot_rate = bot_rate or AccountRate(BOT_WRITES_PER_SECOND, 1.0)
        self.bot.session.middleware(self._paced)
        if mode == "polling":
            self.bot.session.middleware(self._before_request)

    def pacing(self, chat_id: str) -> Pacing:
        """Telegram: a message (or edit) a second in a private chat, 20 a minute in a group."""
        return GROUP_PACING if chat_id.startswith("-") else PRIVATE_PACING

    def measure(self, text: str) -> int:
        """UTF-16 units of what Telegram shows once it has parsed the rendered HTML, or of the
        Markdown as written (the plain-text fallback) when that is longer; past every limit when
        it holds more than the 100 entities Telegram reads, so no part (nor caption) holds more.
        Not a share of the limit per entity: a caption's limit is a quarter of a message's, its
        entities' the same 100."""
        if self._parse_mode is None:
            return utf16_length(text)
        rendered = telegram_html.render(text)
        length = max(utf16_length(telegram_html.visible_text(rendered)), utf16_length(text))
        if telegram_html.entity_count(rendered) > telegram_html.MAX_ENTITIES:
            return max(length, self.text_limit + 1)
        return length

    max_spans = telegram_html.MAX_ENTITIES
    """Telegram reads a message's or a caption's first 100 entities only (see `measure`)."""

    def spans(self, text: str) -> int:
        """The entities Telegram makes of the Markdown ``text`` once rendered (none as plain text)."""
        return 0 if self._parse_mode is None else telegram_html.entity_count(telegram_html.render(text))

    def connection(self) -> ConnectionState:
        """``down`` while Telegram refuses the token for the adapter's calls, else how polling fares
        (`platforms.telegram_polling`); a webhook has no connection to watch."""
        if (refusal := self._token_watch.refusal) is not None:
            return refusal
        return self._poll_watch.state.state if self.mode == "polling" else NO_CONNECTION

    def bind_chat_moves(self, moves: Mapping[str, str], moved: ChatMoved) -> None:
        """The groups upgraded so far, and where to store the next upgrades (`MovesChats`)."""
        self._moves.bind(moves, moved)

    def bind_edits(self, edited: MessageEdited) -> None:
        """Where a user's edit of their message goes (`HearsEdits`)."""
        self._edits = edited

    def bind_chat_lost(self, lost: ChatLost) -> None:
        """Where the chats the bot can no longer write to go (`LosesChats`, `platforms.telegram_membership`)."""
        self._membership.bind(lost)

    def bind_last_seen(self, last_seen: Mapping[str, str], seen: SeenRecorder, stored: SeenLookup) -> None:
        """`CatchesUp`'s store, for the edits a webhook delivers before their messages (`EarlyEdits`): recorded in
        webhook mode, read back in either (a restart may switch modes between an edit and its message)."""
        self._early_edits.bind(seen if self.mode == "webhook" else None, stored)

    # -- lifecycle ---------------------------------------------------------------

    async def start(self, sink: InboundSink, commands: Sequence[CommandSpec] = ()) -> None:
        """getMe, setMyCommands, then polling (after deleteWebhook) or setWebhook. Returns
        once updates flow; raises a `DeliveryError` if Telegram cannot be reached or the
        token is refused (setMyCommands failing is only logged; what Telegram would refuse is left
        out of the menu: `_menu`)."""
        if self._sink is not None:
            raise RuntimeError("the telegram adapter is already started")
        self._command_names = frozenset(n.lstrip("/").lower() for c in commands for n in (c.name, *c.aliases))
        try:
            me = await self._calls.call("getMe", None, self.bot.me, timeout=self._start_timeout)
            self._bot_id, self._username = me.id, (me.username or "").lower()
            if menu := _menu(commands):
                try:
                    await self._calls.call("setMyCommands", None, lambda: self.bot.set_my_commands(menu),
                                           timeout=self._start_timeout)
                except DeliveryError:
                    pass  # logged; the commands still work when typed
            self._sink = sink
            await self._replacing_webhook()
            if self.mode == "webhook":
                assert self.webhook_url is not None
                allowed = self._dp.resolve_used_update_types()
                await self._calls.call(
                    "setWebhook",
                    None,
                    lambda: self.bot.set_webhook(self.webhook_url, secret_token=self._secret, allowed_updates=allowed),
                    timeout=self._start_timeout,
                )
            else:
                await self._calls.call(
                    "deleteWebhook", None, lambda: self.bot.delete_webhook(drop_pending_updates=False),
                    timeout=self._start_timeout)
                await self._start_polling()
        except BaseException:
            await self.stop()
            raise

    async def _replacing_webhook(self) -> None:
        """Warns when the start is about to take another's webhook away (`telegram_webhook.replaced`)."""
        try:
            info = await self._calls.call("getWebhookInfo", None, self.bot.get_webhook_info,
                                          timeout=self._start_timeout)
        except DeliveryError:
            return  # logged; the start goes on without the check
        ours = self.webhook_url if self.mode == "webhook" else None
        if (warning := telegram_webhook.replaced(info.url, ours)) is not None:
            log.warning("%s", warning)

    async def _start_polling(self) -> None:
        self._polling_started.clear()
        # What an earlier run held or skipped was never confirmed (a stop leaves it so): Telegram serves it
        # again from the start, and an offset kept from then would confirm what it had not handed over.
        self.albums.reset()
        self._skipped_to = 0
        self._polling = asyncio.create_task(
            self._dp.start_polling(
                self.bot,
                polling_timeout=self._polling_timeout,
                handle_as_tasks=False,  # the sink returns before the offset confirms the update
                handle_signals=False,  # the gateway owns SIGINT/SIGTERM
                close_bot_session=False,  # stop() closes it, in both modes
            ),
            name="telegram-polling",
        )
        started = asyncio.ensure_future(self._polling_started.wait())
        await asyncio.wait({started, self._polling}, return_when=asyncio.FIRST_COMPLETED)
        started.cancel()
        if self._polling.done():
            self._polling.result()  # start_polling failed before it ran: raise that

    async def _on_polling_started(self) -> None:
        self._poll_watch.started()
        self._polling_started.set()

    async def stop(self) -> None:
        """`stop_within`, then `close`. Idempotent."""
        try:
            await self.stop_within(0)
        finally:
            await self.close()

    async def stop_within(self, seconds: float) -> None:
        """Take nothing more: stop polling (an update being handed over is left unconfirmed, so Telegram
        serves it again), stop accepting webhook requests (they get 503, Telegram retries). Waits on nothing
        of Telegram's. The bot's HTTP session stays open for the replies of the turns still ending, until
        `close`. Idempotent."""
        self._sink = None
        task, self._polling = self._polling, None
        if task is not None:
            if not task.done() and self._polling_started.is_set():
                await self._dp.stop_polling()
            task.cancel()
            # Waited for, not awaited: awaited, a cancellation of this stop came back as the task's, and was lost.
            await asyncio.wait((task,))
            if not task.cancelled() and task.exception() is not None:
                log.error("telegram polling had failed", exc_info=task.exception())

    async def close(self) -> None:
        """Close the bot's HTTP session, after `stop_within` (aiogram would open another for a later call:
        the gateway makes none). Idempotent."""
        await self._membership.close()
        await self.bot.session.close()

    # -- receiving -----------------------------------------------------------------

    async def _on_message(self, message: Message, event_update: Update) -> None:
        # An album is one update per item: handed over as one message, or each item would be
        # a turn of its own, interrupting the one before it (the caption is only on one item).
        # The sender's albums held in this chat go first: this message was written after them.
        album = message.media_group_id
        for held in self.albums.take(after=message):
            await self._hand_over_album(held)
        await self.webhook_albums.after(message)  # a webhook's requests come at once
        upgrade = upgrade_of(message)
        if upgrade is not None:
            await self._until_recorded(f"the upgrade of chat {upgrade[0]}", lambda _: self._moves.chat_moved(*upgrade))
            return
        if album is not None and self.mode == "polling":
            self.albums.hold(message, event_update.update_id)
            return
        if album is not None:
            await self.webhook_albums.join(message, event_update.update_id, self._hand_over_album)
            return
        inbound = self._to_inbound(message, event_update.update_id)
        if inbound is None:
            return
        # Nothing awaited after the edit is looked up: one handed to the gateway from now on finds the message.
        await self._hand_over(self._early_edits.apply(message, await self._upgraded(inbound, message)))
        self._early_edits.handed(message)

    async def _on_edited(self, message: Message, event_update: Update) -> None:
        """A user edited the text or caption of their message (``edited_message``): the gateway answers the new
        one if the message still waits for its turn. Read as the message was (`telegram_inbound.to_inbound`), so
        its chat, thread and message id are those it was handed over with; one the gateway did not take is kept in
        case the message comes after it, and one older than an edit of the message already heard is passed over
        (`telegram_webhook.EarlyEdits`). An album's item is not handed over:
        the album is one message, its text the captions of several items. Confirmed to Telegram, as a message
        is, only once the gateway has recorded it (`_until_recorded`)."""
        if (edited := self._edits) is None or message.media_group_id is not None:
            return
        inbound = telegram_inbound.to_inbound(
            message, self._event_id(event_update.update_id), bot_id=self._bot_id, username=self._username,
            command_names=self._command_names, moved_from=self._moves.moved_from,
            max_attachment_bytes=self.max_attachment_bytes)
        if inbound is None or inbound.message_id is None:
            log.debug("telegram: an edit of message %s in chat %s is not for the bot (update %s)",
                      message.message_id, message.chat.id, event_update.update_id)
            return
        update_id = event_update.update_id
        # Kept: the message may come only now (a webhook's). Passed over: a later edit came first.
        if not self._early_edits.keep(message, update_id, inbound):
            log.info("telegram: an edit of message %s in chat %s (update %s) came after a later edit of it; passed"
                     " over", message.message_id, message.chat.id, update_id)
            return

        async def record(_: InboundSink) -> None:
            if await edited("telegram", inbound.chat_id, inbound.thread_id, inbound.message_id or "", inbound.text):
                self._early_edits.taken(message, update_id)
            else:  # before Telegram is answered: confirmed, it is never delivered again
                self._early_edits.left(message, update_id)

        await self._until_recorded(f"the edit of message {inbound.message_id} (update {update_id})", record)

    async def _on_membership(self, update: ChatMemberUpdated, event_update: Update) -> None:
        """The bot's status in a chat changed (``my_chat_member``): removed or blocked, the gateway stops the chat's
        work (`LosesChats`); added back or unblocked, the chat's next message is answered as any. By the chat's id
        as the gateway knows it (a supergroup's, the group's it was).

        Polling hands updates over one after another: the stop (a journal commit, longer on a distributed engine)
        runs in a task of its own (`Membership.lost`, asked again while the store refuses it), or every other
        chat's messages would wait for it; a message of the chat waits for it (`_hand_over`). A webhook's requests
        run side by side: there the stop is confirmed to Telegram, as a message is, once it is recorded
        (`_until_recorded`)."""
        here = str(update.chat.id)
        chat = self._moves.moved_from.get(here, here)
        if not self._membership.current(chat, event_update.update_id, update.date):
            log.info("telegram: update %s (the bot %s in chat %s) came after a later change of the bot's place there;"
                     " passed over", event_update.update_id, update.new_chat_member.status, chat)
            return
        if (why := gone(update)) is None:
            if self._membership.back(chat):
                log.info("telegram: the bot may write to chat %s again (%s there)", chat, update.new_chat_member.status)
            return
        log.debug("telegram: update %s: the bot is %s in chat %s", event_update.update_id,
                  update.new_chat_member.status, chat)
        if self.mode == "polling":
            self._membership.lost(chat, why)
            return
        await self._until_recorded(f"the bot's removal from chat {chat} (update {event_update.update_id})",
                                   lambda _: self._membership.tell(chat, why))

    def _refused_in(self, chat_id: str, error: DeliveryError) -> None:
        """A call for ``chat_id`` failed: one refused as the bot's blocked or removed is told (`Membership`)."""
        self._membership.refused(self._moves.moved_from.get(chat_id, chat_id), error)

    async def _paced(self, make_request: Any, bot: Bot, method: TelegramMethod[Any]) -> Any:
        """A request middleware: each message sent or edited waits its turn in the bot's overall rate. The
        outbox paces each chat only, so a burst to many chats at once drew Telegram's 429s past about 30 a
        second. Every call made counts, a plain-text retry or a send made again in a supergroup too; typing,
        deletions and the rest do not (they make no message, and typing is cosmetic)."""
        if isinstance(method, _WRITES):
            await self._bot_rate.turn()
        return await make_request(bot, method)

    async def _before_request(self, make_request: Any, bot: Bot, method: TelegramMethod[Any]) -> Any:
        if isinstance(method, GetUpdates):
            # Past the updates skipped as unreadable: every update before them was handed over.
            if self._skipped_to > (method.offset or 0):
                method.offset = self._skipped_to
            return await self.albums.poll(
                lambda poll: self._poll_watch.get_updates(lambda: self._get_updates(make_request, bot, poll)),
                method, self._hand_over_album)
        return await make_request(bot, method)

    async def _get_updates(self, make_request: Any, bot: Bot, method: GetUpdates) -> list[Update]:
        """One getUpdates; an answer aiogram cannot read as a whole is read update by update
        (`platforms.telegram_updates`), or polling would get it again and again."""
        try:
            return await make_request(bot, method)
        except ClientDecodeError as exc:
            answered = telegram_updates.answered(exc, bot)
            if answered is None:
                raise
        for update_id, update in answered:
            if update is None:
                self._skipped_to = max(self._skipped_to, update_id + 1)
        return [update for _, update in answered if update is not None]

    async def _hand_over_album(self, album: Album) -> None:
        """An album as one inbound: its captions, read as one text (`telegram_albums.captions_of`),
        decide whether it is for the bot; the first item's update id is its event id, also when
        Telegram serves it again whole. Every item's update id is an alias of it: a webhook's items
        delivered again apart (their answers lost) gather apart, each under its own first id, and the
        inbox knows each by the album it was recorded with.

        An album whose message cannot be built (an item of a shape we do not read) is logged and dropped,
        as an update the gateway fails on is (`_until_recorded`): raised, it took with it every album taken
        out of the hold in the same step, and with polling the updates of the poll that found them (a failed
        getUpdates, which aiogram logs at DEBUG only)."""
        try:
            lead = next((m for m, _ in album if m.caption), album[0][0])
            caption, entities = captions_of([m for m, _ in album])
            if caption:
                lead = lead.model_copy(update={"caption": caption, "caption_entities": entities or None})
            inbound = self._to_inbound(lead, album[0][1])
            if inbound is None:
                return
            every = tuple(a for m, _ in album for a in telegram_files.attachments_of(m, self.max_attachment_bytes))
            aliases = tuple(self._event_id(update_id) for _, update_id in album)
        except Exception:
            log.exception("telegram: could not read the album of update(s) %s in chat %s; it is dropped",
                          ", ".join(str(update_id) for _, update_id in album), album[0][0].chat.id)
            return
        inbound = await self._upgraded(inbound, lead)
        await self._hand_over(dataclasses.replace(inbound, attachments=every, aliases=aliases))

    async def _upgraded(self, inbound: Inbound, message: Message) -> Inbound:
        """``inbound``, made of ``message``, under the group's chat id if it was written in the supergroup
        the group just became, as it is once the upgrade is known. A webhook may deliver it before the
        upgrade's service messages: it waits for them (`telegram_moves.UpgradeWait`); polling serves them
        first. An album waits too, its lead item standing for it: its items are numbered in a row."""
        if self.mode != "webhook" or not (group := await self.upgrade_wait.group_of(message, self._moves.moved_from)):
            return inbound
        return dataclasses.replace(inbound, chat_id=group,
                                   message_id=written_in(str(message.chat.id), group, message.message_id),
                                   reply_to=telegram_inbound.replied_to(message, group))

    async def _hand_over(self, inbound: Inbound) -> None:
        self._membership.back(inbound.chat_id)  # someone writes there: the bot is in the chat
        self._membership.topic_back(inbound.chat_id, inbound.thread_id)
        # The chat's stop under way (`_on_membership`) first: taking effect after it, it would end its turn.
        await self._membership.settled(inbound.chat_id)

        async def record(sink: InboundSink) -> None:
            self._comments.handed(inbound, await sink(inbound))

        if not await self._until_recorded(f"update {_update_id(inbound)}", record) and inbound.is_command:
            await self._tell_not_handled(inbound)

    async def _tell_not_handled(self, command: Inbound) -> None:
        """Tell the user of a command the gateway failed on (a bug it trips: dropped, `_until_recorded`) that it
        could not be handled (`NOT_HANDLED`): nothing else answers it, and its user, who sent ``/stop`` to stop a
        turn, would wait for an answer that never comes. Before the next update (the answers to later commands come
        after it), within `NOT_HANDLED_SECONDS`; never raises: a failure is logged."""
        name = command.text.split(maxsplit=1)[0]
        log.warning("telegram: %s from user %s (update %s) was dropped, the gateway failing on it; telling the user",
                    name, command.user_id, _update_id(command))
        try:
            await asyncio.wait_for(self.send(not_handled(command)), NOT_HANDLED_SECONDS)
        except Exception as exc:
            log.warning("telegram: could not tell user %s what became of %s (%s)", command.user_id, name,
                        type(exc).__name__)

    async def _until_recorded(self, what: str, record: Callable[[InboundSink], Awaitable[object]]) -> bool:
        """``record(sink)`` until it succeeds while the store refuses it: polling retries it (backing
        off), a webhook answers 500. Any other failure is the update's own, and would recur at every
        try, holding up every later update: it is logged and the update dropped (False)."""
        delay = SINK_RETRY_FIRST
        while (sink := self._sink) is not None:
            try:
                await record(sink)
                return True
            except Exception as exc:
                if not storage_refusal(exc):
                    log.exception("telegram: the gateway refused %s; it is dropped", what)
                    return False
                if self.mode == "webhook":
                    raise  # answered 500: Telegram delivers it again
                # aiogram would log this and confirm the update with its next poll: it would be lost.
                log.warning("telegram: %s was not recorded; handing it over again in %.1f s",
                            what, delay, exc_info=delay == SINK_RETRY_FIRST)
            await asyncio.sleep(delay)
            delay = min(delay * 2, SINK_RETRY_MAX)
        if self.mode == "webhook":
            raise NotTaken("the telegram adapter has stopped")  # answered 503: Telegram delivers it again
        # Polling is stopping: returning would let aiogram confirm the update with its next poll.
        await asyncio.Event().wait()
        return False  # never reached: the stop cancels the wait

    def _to_inbound(self, message: Message, update_id: int) -> Inbound | None:
        inbound = telegram_inbound.to_inbound(
            message, self._event_id(update_id), bot_id=self._bot_id, username=self._username,
            command_names=self._command_names, moved_from=self._moves.moved_from,
            max_attachment_bytes=self.max_attachment_bytes)
        self._comments.heard(message, inbound)
        return inbound

    def _event_id(self, update_id: int) -> str:
        """The event id of an update, ``<bot id>:<update id>``: Telegram numbers each bot's updates on its own, and
        a new bot on the same state directory reused the old one's ids, its messages dropped as repeats. The bot id
        is the token's part before the colon, which Telegram shows anyone (getMe); never what follows it."""
        return f"{self._bot_id}:{update_id}"

    def web_routes(self) -> Sequence[Any]:
        if self.mode != "webhook":
            return []
        assert self.webhook_url is not None
        return [web.post(urlsplit(self.webhook_url).path or "/", self._webhook.handle)]

    # -- sending -------------------------------------------------------------------

    async def send(self, message: Outbound) -> Sent:
        """sendMessage; notices (``silent``) go with ``disable_notification``, a part that quotes a
        message (``reply_to``) with ``reply_parameters``, sent unquoted if that message is gone
        (``allow_sending_without_reply``) or stayed in a group since upgraded (`_quote`).
        A part of an answer to a comment under a channel's post that quotes nothing replies to the post
        (`platforms.telegram_threads`), so it lands under the post too.
        Telegram has no idempotency key: a retry after a lost
        answer may show the message twice."""
        def send_to(chat_id: str) -> Awaitable[Message | None]:
            return self._replying(message, chat_id, lambda reply: self._calls.formatted(
                "sendMessage",
                chat_id,
                message.text,
                lambda text, parse_mode: self.bot.send_message(
                    chat_id=chat_id,
                    text=text,
                    message_thread_id=_thread(message.thread_id),
                    disable_notification=True if message.silent else None,
                    parse_mode=parse_mode,
                    reply_parameters=reply,
                ),
            ))

        with self._into_topic(message.chat_id, message.thread_id):
            return _sent(message.chat_id, *await self._moves.where_it_is_now(message.chat_id, send_to))

    def upload_limit(self, chat_id: str) -> int:
        """The Bot API takes uploads of up to 50 MB from bots."""
        return UPLOAD_LIMIT

    async def send_file(self, message: Outbound, file: OutboundFile) -> Sent:
        """sendPhoto for a JPEG or PNG picture of at most 10 MB (Telegram shows it in the chat),
        sendDocument for anything else and for a picture Telegram will not take as a photo; the
        caption rendered as a part's text is. As for `send`, it quotes the part's ``reply_to``
        (``reply_parameters``) or lands under the channel's post it answers, and there is no idempotency
        key. The call is given the bot's request timeout plus a second for every `SLOWEST_UPLOAD` bytes of
        the file."""
        photo = file.size <= PHOTO_LIMIT and await asyncio.to_thread(_is_picture, file.path)
        timeout = math.ceil(self.bot.session.timeout + file.size / SLOWEST_UPLOAD)

        async def deliver(chat_id: str, reply: ReplyParameters | None) -> Message | None:
            def upload(method: str) -> Awaitable[Message | None]:
                def request(caption: str, parse_mode: str | None) -> Awaitable[Message]:
                    kw: dict[str, Any] = {
                        "chat_id": chat_id, "caption": caption or None, "parse_mode": parse_mode,
                        "message_thread_id": _thread(message.thread_id),
                        "disable_notification": True if message.silent else None,
                        "reply_parameters": reply,
                    }
                    upload = FSInputFile(file.path, filename=file.name)
                    kw["request_timeout"] = timeout
                    return self.bot.send_photo(photo=upload, **kw) if method == "sendPhoto" else \
                        self.bot.send_document(document=upload, **kw)
                return self._calls.formatted(method, chat_id, blank.caption(message.text), request)

            if photo:
                try:
                    return await upload("sendPhoto")
                except BadRequest as exc:
                    if isinstance(exc, GroupUpgraded) or not any(w in str(exc).upper() for w in ("PHOTO", "IMAGE")):
                        raise
                    # By size, not name: the name is the model's word, often a user's, and the log is the operator's.
                    log.info("telegram: chat %s: a picture of %d bytes was refused as a photo; sending it as a"
                             " document", chat_id, file.size)
            return await upload("sendDocument")

        def send_to(chat_id: str) -> Awaitable[Message | None]:
            return self._replying(message, chat_id, lambda reply: deliver(chat_id, reply))

        with self._into_topic(message.chat_id, message.thread_id):
            return _sent(message.chat_id, *await self._moves.where_it_is_now(message.chat_id, send_to))

    @contextlib.contextmanager
    def _into_topic(self, chat_id: str, thread_id: str | None) -> Iterator[None]:
        """Around a write into topic ``thread_id`` of ``chat_id``: refused as the topic is deleted, the topic's work is
        lost (`Membership.refused_in_topic`)."""
        try:
            yield
        except DeliveryError as exc:
            self._membership.refused_in_topic(chat_id, thread_id, exc)
            raise

    async def _replying(self, message: Outbound, chat_id: str,
                        send: Callable[[ReplyParameters | None], Awaitable[Message | None]]) -> Message | None:
        """``send(reply_parameters)`` of ``message`` into ``chat_id``, quoting its ``reply_to`` (`_quote`), or replying
        to the post whose comments its turn answers. A comment it quotes (`CommentThreads.post_of`) that is gone
        meanwhile leaves it replying to the post: sent replying to nothing (``allow_sending_without_reply``), it
        landed in the discussion group's own chat, away from the post and the rest of its answer."""
        post = self._comments.reply_to(message)
        under = None if post is not None else self._comments.post_of(message)
        if under is None:
            return await send(_quote(message, chat_id, post))
        try:
            return await send(_quote(message, chat_id, anyway=False))
        except NotFound as exc:
            if REPLY_GONE not in str(exc):
                raise
            return await send(_quote(message, chat_id, under))

    async def edit(self, chat_id: str, thread_id: str | None, message_id: str, text: str) -> None:
        """editMessageText; identical text ("message is not modified") is success. A message
        that is gone raises `NotFound`, one that can no longer be edited `EditUnsupported`
        (also one left behind in a group upgraded to a supergroup, and one whose id Telegram did not say:
        `NO_ID`)."""
        _known("editMessageText", chat_id, message_id)
        # Telegram checks an edit for edit rights only, so an edit in an upgraded group gets no
        # migrate_to_chat_id: Telegram refuses it as a message that can't be edited.
        chat, number = self._moves.locate("editMessageText", chat_id, message_id)
        await self._calls.formatted(
            "editMessageText",
            chat,
            text,
            lambda body, parse_mode: self.bot.edit_message_text(
                chat_id=chat, message_id=int(number), text=body, parse_mode=parse_mode
            ),
            not_modified_ok=True,
        )

    async def typing(self, chat_id: str, thread_id: str | None) -> None:
        """sendChatAction "typing". Cosmetic: a failure is logged, never raised."""
        try:
            with self._into_topic(chat_id, thread_id):
                await self._moves.where_it_is_now(
                    chat_id,
                    lambda chat: self._calls.call(
                        "sendChatAction",
                        chat,
                        lambda: self.bot.send_chat_action(
                            chat_id=chat, action="typing", message_thread_id=_thread(thread_id)
                        ),
                        warn=self._typing_failures,  # refreshed every few seconds: once per cause
                    ),
                )
        except DeliveryError:
            pass  # logged (`BotCalls.call`)
        except Exception:  # the chat's upgrade could not be stored: the next write tells it again
            log.warning("telegram: typing in chat %s failed", chat_id, exc_info=True)

    async def idle(self, chat_id: str, thread_id: str | None) -> None:
        """Nothing to clear: Telegram ends "typing" at the bot's next message, or after 5 s."""

    async def delete(self, chat_id: str, thread_id: str | None, message_id: str) -> None:
        """deleteMessage; a message already gone counts as deleted. One left behind in a group
        upgraded to a supergroup raises `EditUnsupported`, and so does one whose id Telegram did not say (`NO_ID`)."""
        _known("deleteMessage", chat_id, message_id)
        chat, number = self._moves.locate("deleteMessage", chat_id, message_id)
        try:
            await self._moves.unmoved("deleteMessage", chat, self._calls.call(
                "deleteMessage", chat, lambda: self.bot.delete_message(chat_id=chat, message_id=int(number)),
                caller_logs=True))
        except NotFound:
            pass

    def unchangeable(self, chat_id: str, message_id: str) -> bool:
        """`KnowsUnchangeable`: whether `edit` and `delete` refuse this message without asking Telegram (`NO_ID`,
        or a message left behind in a group since upgraded)."""
        try:
            _known("editMessageText", chat_id, message_id)
            self._moves.locate("editMessageText", chat_id, message_id)
        except EditUnsupported:
            return True
        return False

    async def download(self, attachment: Attachment) -> bytes:
        """getFile, then the file itself, streamed and stopped past ``max_attachment_bytes``."""
        return await telegram_files.download(
            self.bot, attachment, self.max_attachment_bytes,
            lambda method, request: self._calls.call(method, None, request, caller_logs=True))


MENU_NAME = re.compile(r"[a-z0-9_]{1,32}")
MENU_SIZE, MENU_DESCRIPTION = 100, 256
"""The Bot API's BotCommand: a name of 1-32 characters a-z, 0-9 and _, a description of 1-256
characters (trimmed); at most 100 commands. One command outside them fails the whole setMyCommands."""


def _menu(commands: Sequence[CommandSpec]) -> list[BotCommand]:
    """The command menu Telegram will take: a command whose name it refuses (``café``, too long) is
    left out, logged once with its name, rather than losing the menu; typed, it still works. A
    description is trimmed, cut to fit, or the command's name when it is empty."""
    menu: list[BotCommand] = []
    refused: list[str] = []
    for c in commands:
        name = c.name.lstrip("/")
        if not MENU_NAME.fullmatch(name) or len(menu) == MENU_SIZE:
            refused.append(c.name)
            continue
        description = c.description.strip() or name
        if len(description) > MENU_DESCRIPTION:
            description = description[:MENU_DESCRIPTION - 1].rstrip() + "…"
        menu.append(BotCommand(command=name, description=description))
    if refused:
        log.warning("telegram: left out of the command menu (Telegram takes at most %d commands, named with 1-32"
                    " of a-z, 0-9 and _): %s; typed, they still work", MENU_SIZE, ", ".join(refused))
    return menu


def _sent(gateway_chat: str, chat_id: str, sent: Message | None) -> Sent:
    """The `Sent` of a message made in ``chat_id`` for the gateway's ``gateway_chat``: ``<chat>:<id>`` in the
    supergroup it became (`platforms.telegram_supergroups`); a `NO_ID` id when Telegram's answer said it was
    done but named no message id (`platforms.telegram_calls.BotCalls.call`)."""
    number = getattr(sent, "message_id", None)
    if not isinstance(number, int) or isinstance(number, bool):
        return Sent(f"{NO_ID}{uuid.uuid4().hex}")
    return Sent(str(number) if chat_id == gateway_chat else f"{chat_id}:{number}")


def _known(method: str, chat_id: str, message_id: str) -> None:
    """Raise `EditUnsupported` for a message whose id Telegram did not say (`NO_ID`): the gateway then sends
    anew what it was to change."""
    if message_id.startswith(NO_ID):
        raise EditUnsupported("Telegram did not say this message's id when it was sent", method=method,
                              chat_id=chat_id, platform="telegram")


def _update_id(inbound: Inbound) -> str:
    """The update id of ``inbound`` (its event id's after the bot's, `TelegramAdapter._event_id`): what Telegram and
    aiogram's log call the update."""
    return inbound.event_id.rpartition(":")[2]


def _is_picture(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(8).startswith(_PICTURES)


def _quote(message: Outbound, chat_id: str, post: int | None = None, *, anyway: bool = True) -> ReplyParameters | None:
    """The reply to ``message.reply_to`` for a send into ``chat_id``, else to ``post`` (the copy of the channel's
    post whose comments it answers): unquoted if that message is gone (``allow_sending_without_reply``, unless not
    ``anyway``: Telegram then refuses the send, `REPLY_GONE`), or was written in the group ``chat_id`` was upgraded
    from."""
    number = quotable_in(chat_id, message.chat_id, message.reply_to) if post is None else post
    return None if number is None else ReplyParameters(message_id=number, allow_sending_without_reply=anyway or None)


def _thread(thread_id: str | None) -> int | None:
    return int(thread_id) if thread_id else None
