"""Telegram's webhook endpoint: the updates Telegram posts when the adapter runs in webhook mode.

Apart from the adapter (`platforms.telegram`) because it is that mode's own edge: the secret
token check, the answers Telegram acts on (401, 400, 500 and 503 against 200) and the updates
aiogram cannot read. Polling never comes here (but for `replaced`). Logged under ``platforms.telegram``.

Telegram delivers an update again, and again, for as long as it is answered anything but 2xx, and
holds the bot's later updates meanwhile. So only an update the gateway did not record for a reason
a later try can end (its storage refused it, the adapter stopped: `NotTaken`) is answered 500 or
503. One the adapter failed on otherwise (a bug one odd update trips) would fail the same way at
every try and wedge the bot: it is logged at ERROR with its update id and the failure, and answered
200, as polling confirms such an update (aiogram logs it and goes on).

Telegram keeps one webhook per bot, and ``start`` replaces whatever is set (polling deletes it): a second
gateway on the same token took the updates from the first without a word to either, the one in webhook mode
hearing nothing from then on. `replaced` is the one line that says so, logged by the gateway that starts.

Nor does Telegram deliver a webhook's updates in order: it posts several at once, and an update answered 500 comes
again after the ones that followed it. A user's edit may so come before the message it edits, which the gateway
has not been handed yet: `EarlyEdits` keeps it for the message, in the gateway's store too (Telegram was answered 200
for the edit, and will not deliver it again after a restart).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import secrets
from collections.abc import Callable
from urllib.parse import urlsplit

from aiogram import Bot, Dispatcher
from aiogram.types import Message
from aiohttp import web

from platforms import telegram_updates
from platforms.base import Inbound, SeenLookup, SeenRecorder
from platforms.not_recorded import storage_refusal
from platforms.repeated_warnings import RepeatedWarnings
from platforms.telegram_edits import EditOrder, LatestEdits, order_of

log = logging.getLogger("platforms.telegram")

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
EARLY_EDITS = 100
"""Edits kept in memory for messages not delivered yet (`EarlyEdits`), the oldest forgotten first."""
HANDED = 1000
"""Messages remembered as handed over (`EarlyEdits.handed`), the oldest forgotten first: a later edit of one is not
recorded in the store."""
EDITED = "edited:"
"""How the key begins under which the gateway's store keeps an edit for its message (`EarlyEdits.bind`)."""


def replaced(set_url: str, ours: str | None) -> str | None:
    """What a start does to the webhook ``set_url`` Telegram holds for the bot (``ours`` is this gateway's, None
    when it polls), when that is another one's; only its host is named: a path may hold a secret."""
    if not set_url or set_url == ours:
        return None
    action = "polling deletes it" if ours is None else "this gateway's webhook replaces it"
    return (f"telegram: a webhook to {urlsplit(set_url).hostname} was set for this bot and {action}: another gateway"
            " (or program) in webhook mode with this token hears nothing from now on; only one gateway may use a"
            " Telegram token (nothing to do if that webhook was this gateway's before a change of its settings)")


class NotTaken(Exception):
    """The update was not handed over because the adapter stopped: Telegram must deliver it again."""


class WebhookEndpoint:
    """Feeds the updates posted with ``secret`` to the dispatcher while ``running()``."""

    def __init__(self, secret: str, bot: Bot, dp: Dispatcher, running: Callable[[], bool]) -> None:
        self._secret, self._bot, self._dp, self._running = secret, bot, dp, running
        self._refusals = RepeatedWarnings(log)

    async def handle(self, request: web.Request) -> web.Response:
        # A header's non-UTF-8 bytes arrive as lone surrogates: they make a wrong secret, not a 500.
        given = request.headers.get(SECRET_HEADER, "").encode("utf-8", "surrogateescape")
        if not secrets.compare_digest(given, self._secret.encode()):
            # Once, then counted: a stranger could post from as many addresses as they have.
            self._refusals.warning("secret token", "telegram webhook: refused a request without the right secret "
                                   "token from %s", request.remote)
            return web.Response(status=401, text="Unauthorized")
        if not self._running():
            return web.Response(status=503, text="not running")  # Telegram delivers it again later
        try:
            body = await request.json()
        except (ValueError, LookupError, RecursionError):  # not JSON, a charset Python lacks, nesting too deep
            return web.Response(status=400, text="malformed update")  # a 500 Telegram would send again and again
        except ConnectionResetError:  # hung up mid-body: aiohttp logged each at ERROR, with a traceback
            return web.Response(status=400, text="body cut short")  # to no one; Telegram sends it again
        if not (isinstance(body, dict) and isinstance(body.get("update_id"), int)):
            return web.Response(status=400, text="malformed update")
        update = telegram_updates.readable(body, self._bot)
        if update is None:
            return web.json_response({})  # logged: refused, Telegram would deliver it again and again
        try:
            await self._dp.feed_update(self._bot, update)
        except NotTaken:
            return web.Response(status=503, text="not running")
        except Exception as exc:
            if storage_refusal(exc):
                # Every update is refused while it lasts: warned of once, then counted.
                self._refusals.warning("storage", "telegram webhook: update %s was not recorded (%s: %s); answered "
                                       "500, Telegram delivers it again", update.update_id, type(exc).__name__, exc)
                return web.Response(status=500, text="not recorded")
            # Answered 500, it would come back at every retry, and every later update behind it.
            log.exception("telegram webhook: update %s failed and is dropped (answered 200, or Telegram would "
                          "deliver it again and again, holding up every later update)", update.update_id)
        return web.json_response({})


class EarlyEdits:
    """Users' edits kept for the message each edits, in case Telegram delivers the message after it: the gateway,
    finding no message to change, left the edit unused, and the message came as first written. The message, when it
    comes, says what its latest edit says, as it would had it come first and waited for its turn; not when either is
    a command (an edit makes no command, nor changes one: `gateway.message_edits`). An edit is kept from before it
    is handed to the gateway until the gateway took it (`taken`), so a message handed over meanwhile says it too.
    Polling hands updates over in order: there the message comes first.

    An edit older than one of the same message heard already (`telegram_edits`) is passed over (`keep`), whether
    its message waits for its turn or is still to come: it would change the message back to what the user had
    corrected. Heard in this process lately (`telegram_edits.LatestEdits`), or recorded in the gateway's store.

    At most `EARLY_EDITS` in memory. Once bound to the gateway's store (`bind`), an edit the gateway left unused is
    also recorded there (`left`), before Telegram is answered for it: a restart before its message came forgot it,
    and the message was answered as first written; and a message delivered again (its hand-over refused) still finds
    it. Not an edit of a message this process handed over (`handed`), the everyday edit of a message answered
    already: Telegram never delivers that message as new again (a redelivery the gateway drops as a repeat whatever it
    says), and its text stayed in the store for a month, past the inbox's week and ``/new``. One of a message handed
    over before a restart is recorded, and changes nothing. An edit that changed a waiting message (`taken`) is
    recorded under the same key without its text, which the inbox holds with the message: only its place, so that
    an older edit delivered to a later process, which replays the message, is passed over too."""

    def __init__(self, limit: int = EARLY_EDITS) -> None:
        self._limit = limit
        self._latest = LatestEdits()
        self._edits: dict[tuple[int, int], tuple[int, Inbound]] = {}
        self._handed: dict[tuple[int, int], None] = {}
        self._record: SeenRecorder | None = None
        self._stored: SeenLookup = lambda key: None

    def bind(self, record: SeenRecorder | None, stored: SeenLookup) -> None:
        """The gateway's store of positions (`platforms.base.CatchesUp.bind_last_seen`'s), each edit under a key
        of its message's no conversation has: ``record`` keeps one (None: none is kept, as polling has no need),
        ``stored`` reads one back, also one an earlier process kept."""
        self._record, self._stored = record, stored

    def keep(self, message: Message, update_id: int, edit: Inbound) -> bool:
        """The edit ``message`` (of update ``update_id``), read as ``edit``, unless it is older than an edit of the
        message heard in this process lately or recorded in the store (Telegram was answered for that one): then
        False, and it is not to be handed over either. From now on an older one is passed over."""
        key, order = (message.chat.id, message.message_id), order_of(message, update_id)
        latest = self._latest.latest(key) or self._stored_for(message, order)[0]
        if latest is not None and order < latest:
            return False
        self._latest.heard(key, order)
        self._edits.pop(key, None)
        self._edits[key] = (update_id, edit)
        while len(self._edits) > self._limit:
            del self._edits[next(iter(self._edits))]
        return True

    def taken(self, message: Message, update_id: int) -> None:
        """The gateway changed the waiting message with the edit of update ``update_id``: it is not kept, and its
        place is recorded in the store, unless a later edit was heard meanwhile. Raises what the store raises (the
        edit is then not confirmed to Telegram, which delivers it again: the gateway takes it again, unchanged)."""
        key, order = (message.chat.id, message.message_id), order_of(message, update_id)
        if (kept := self._edits.get(key)) is not None and kept[0] == update_id:
            del self._edits[key]
        if self._record is not None and self._latest.latest(key) in (None, order):
            self._record(_key(message), json.dumps({"update_id": update_id, "edit_date": order[0]}))

    def left(self, message: Message, update_id: int) -> None:
        """The gateway left the edit of update ``update_id`` unused: recorded in the store, if it is still the
        latest kept (its message did not come meanwhile) and its message was not handed over. Raises what the store
        raises (the edit is then not confirmed to Telegram, which delivers it again)."""
        key = (message.chat.id, message.message_id)
        kept = self._edits.get(key)
        if self._record is None or kept is None or kept[0] != update_id or key in self._handed:
            return
        self._record(_key(message), json.dumps({"update_id": update_id, "edit_date": order_of(message, update_id)[0],
                                                "text": kept[1].text, "command": kept[1].is_command}))

    def handed(self, message: Message) -> None:
        """The gateway recorded ``message`` (or dropped it for good): its edits from now on are recorded nowhere."""
        self._handed[(message.chat.id, message.message_id)] = None
        while len(self._handed) > HANDED:
            del self._handed[next(iter(self._handed))]

    def apply(self, message: Message, inbound: Inbound) -> Inbound:
        """``inbound``, read from ``message``, with the text of the edit kept for it, which is used up (in memory:
        the store's copy stays for the message delivered again)."""
        kept = self._edits.pop((message.chat.id, message.message_id), None)
        if kept is not None:
            update_id, text, command = kept[0], kept[1].text, kept[1].is_command
        else:
            order, text, command = self._stored_for(message)
            update_id = None if order is None else order[1]
        if update_id is None or text is None or inbound.is_command or command or text == inbound.text:
            return inbound
        log.info("telegram: message %s in chat %s came after its edit (update %s); it is read as edited",
                 message.message_id, message.chat.id, update_id)
        return dataclasses.replace(inbound, text=text)

    def _stored_for(self, message: Message, edit: EditOrder = (0, 0)) -> tuple[EditOrder | None, str | None, bool]:
        """The edit the store keeps for ``message``: its place (None if none), its text (None for one the gateway
        took) and whether it is a command. A record made before edits were placed by date is placed as if made in
        the second of ``edit``, by update id alone. One the store cannot read back is none: the message comes as
        written, as before a restart."""
        try:
            stored = self._stored(_key(message))
            if stored is None:
                return None, None, False
            record = json.loads(stored)
            text = record.get("text")
            return ((int(record.get("edit_date", edit[0])), int(record["update_id"])),
                    None if text is None else str(text), bool(record.get("command")))
        except Exception:
            log.exception("telegram: could not read the edit kept for message %s in chat %s", message.message_id,
                          message.chat.id)
            return None, None, False


def _key(message: Message) -> str:
    return f"{EDITED}{message.chat.id}/{message.message_id}"
