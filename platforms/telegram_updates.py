"""Updates aiogram cannot read, read as far as they can be.

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
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from aiogram import Bot
from aiogram.exceptions import ClientDecodeError
from aiogram.types import Update
from pydantic import ValidationError

log = logging.getLogger("platforms.telegram")

_ROUNDS = 20
"""Objects left out of one update at most."""


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
    update = copy.deepcopy(update)
    left_out: list[str] = []
    for _ in range(_ROUNDS):
        try:
            read = Update.model_validate(update, context={"bot": bot})
        except ValidationError as exc:
            # One at a time: two errors may be about one object (a story lacking both its fields).
            dropped = _leave_out(update, exc.errors()[0])
            if dropped is None:
                break
            left_out.append(dropped)
            continue
        if left_out and read.model_fields_set <= {"update_id"}:  # nothing left of what it was about
            break
        if left_out:
            log.warning("telegram: update %s had parts aiogram cannot read, left out: %s", update["update_id"],
                        ", ".join(left_out))
        return read
    log.warning("telegram: update %s cannot be read, skipped (left out so far: %s)", update["update_id"],
                ", ".join(left_out) or "nothing")
    return None


def _leave_out(update: dict[str, Any], error: Any) -> str | None:
    """Remove the object ``error`` is about from ``update`` (the one lacking a field, or the field
    of the wrong kind); its dotted path, or None when there is nothing left to remove."""
    container: Any = None
    key: Any = None
    node: Any = update
    path: list[str] = []
    for step in error["loc"]:
        if isinstance(node, dict) and step in node or isinstance(node, list) and isinstance(step, int) \
                and 0 <= step < len(node):
            container, key, node = node, step, node[step]
            path.append(str(step))
        # else: a union member's tag (hidden_user), or the missing field itself: not in the data
    if container is None or key == "update_id":
        return None
    del container[key]
    return ".".join(path)
