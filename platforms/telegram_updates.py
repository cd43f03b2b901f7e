"""Updates, and answers to the bot's calls, aiogram cannot read, read as far as they can be.

Telegram now and then leaves out a field its Bot API documents as always there: a message
forwarded, long ago, from someone who hides their account has an origin without
``sender_user_name`` (aiogram#1840); a reply to a story may carry the story as ``{}``
(aiogram#1587). aiogram requires those fields, and it reads a ``getUpdates`` answer as a whole:
one such update fails the answer, nothing in it is confirmed, and the next poll gets the same
answer. The bot would hear nobody until Telegram dropped the update, a day later. A webhook
would answer such an update 400, again at each of Telegram's retries.

`readable` leaves out of an update only the objects aiogram cannot read (the forward's origin,
the story), so the message itself still arrives, and logs what it left out. An update that cannot
be read even so is skipped, with a warning: polling confirms it, a webhook answers it 200.

The same message comes back in Telegram's answer to a send that quotes it (``reply_to_message``):
Telegram made the message, and aiogram raised that it could not read the answer. Taken for a
failed call, the send was made again, and the chat showed the message once more at every retry.
`read_answers`, a request middleware, reads such an answer as `readable` reads an update.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable, Container
from typing import Any, TypeVar

from aiogram import Bot
from aiogram.exceptions import ClientDecodeError
from aiogram.methods import TelegramMethod
from aiogram.methods.base import Response
from aiogram.types import Update
from pydantic import ValidationError

log = logging.getLogger("platforms.telegram")

_ROUNDS = 20
"""Objects left out of one update (or answer) at most."""

T = TypeVar("T")


def answered(error: ClientDecodeError, bot: Bot) -> list[tuple[int, Update | None]] | None:
    """The update ids of a getUpdates answer aiogram could not read, each with its update as far as
    it can be read (`readable`); None when it was not such an answer (not a successful one holding
    a list of updates)."""
    data = error.data
    if not (isinstance(data, dict) and data.get("ok") is True and isinstance(data.get("result"), list)):
        return None
    updates = data["result"]
    if not all(isinstance(u, dict) and isinstance(u.get("update_id"), int) for u in updates):
        return None
    return [(update["update_id"], readable(update, bot)) for update in updates]


def readable(update: dict[str, Any], bot: Bot) -> Update | None:
    """``update`` as aiogram reads it, without the objects it cannot read; None if nothing of what
    it is about (its message) is left. ``update`` needs an int ``update_id``."""
    read, left_out = _read(update, lambda data: Update.model_validate(data, context={"bot": bot}), keep={"update_id"})
    if read is not None and left_out and read.model_fields_set <= {"update_id"}:
        read = None  # nothing left of what it was about
    if read is None:
        log.warning("telegram: update %s cannot be read, skipped (left out so far: %s)", update["update_id"],
                    ", ".join(left_out) or "nothing")
    elif left_out:
        log.warning("telegram: update %s had parts aiogram cannot read, left out: %s", update["update_id"],
                    ", ".join(left_out))
    return read


async def read_answers(make_request: Callable[[Bot, TelegramMethod[T]], Awaitable[T]], bot: Bot,
                       method: TelegramMethod[T]) -> T:
    """A request middleware (``bot.session.middleware``): what Telegram answered a call with, read
    without the objects aiogram cannot read when it cannot read it whole. Only an answer saying the
    call was done (``ok``, with an object as its result: a message) is read so; any other failure is
    raised as it was, and so is an answer whose result cannot be read even so."""
    try:
        return await make_request(bot, method)
    except ClientDecodeError as exc:
        data = exc.data
        if not (isinstance(data, dict) and data.get("ok") is True and isinstance(data.get("result"), dict)):
            raise
        answer_type = Response[method.__returning__]  # as aiogram reads it (BaseSession.check_response)
        read, left_out = _read(data, lambda d: answer_type.model_validate(d, context={"bot": bot}),
                               keep={"ok", "result"})
        if read is None or read.result is None:
            raise
        log.warning("telegram: the answer to %s had parts aiogram cannot read, left out: %s", method.__api_method__,
                    ", ".join(left_out))
        return read.result


def _read(data: dict[str, Any], validate: Callable[[dict[str, Any]], T], keep: Container[str],
          ) -> tuple[T | None, list[str]]:
    """``validate(data)`` on a copy of ``data``, leaving out the objects it fails on one at a time (at most
    `_ROUNDS`), never the keys ``keep`` of ``data`` itself; and the dotted paths of those left out. None
    when it fails even so."""
    data = copy.deepcopy(data)
    left_out: list[str] = []
    for _ in range(_ROUNDS):
        try:
            return validate(data), left_out
        except ValidationError as exc:
            # One at a time: two errors may be about one object (a story lacking both its fields).
            dropped = _leave_out(data, exc.errors()[0], keep)
            if dropped is None:
                break
            left_out.append(dropped)
    return None, left_out


def _leave_out(data: dict[str, Any], error: Any, keep: Container[str]) -> str | None:
    """Remove the object ``error`` is about from ``data`` (the one lacking a field, or the field
    of the wrong kind); its dotted path, or None when there is nothing left to remove (but ``keep``)."""
    container: Any = None
    key: Any = None
    node: Any = data
    path: list[str] = []
    for step in error["loc"]:
        if isinstance(node, dict) and step in node or isinstance(node, list) and isinstance(step, int) \
                and 0 <= step < len(node):
            container, key, node = node, step, node[step]
            path.append(str(step))
        # else: a union member's tag (hidden_user), or the missing field itself: not in the data
    if container is None or container is data and key in keep:
        return None
    del container[key]
    return ".".join(path)
