"""Groups upgraded to supergroups in the fake Telegram.

A group that becomes a supergroup (an admin turns on a supergroup feature, or Telegram
upgrades it as it grows) gets a new chat id, ``-100…``, and the old chat is deactivated.
The Bot API then answers each call that writes to the old id (``sendMessage``,
``sendChatAction``, ``deleteMessage``: the ones it checks for write access) with 400
"Bad Request: group chat was upgraded to a supergroup chat" and
``parameters.migrate_to_chat_id``, and does nothing. ``editMessageText`` is checked for
edit access only, so it gets no such hint: Telegram refuses to edit a message written
before the upgrade ("message can't be edited").

Telegram also posts two service messages, which bots get whatever their privacy mode:
one in the old chat with ``migrate_to_chat_id``, and the supergroup's first message, with
``migrate_from_chat_id``. `upgrade_group` only upgrades; `push_upgrade_updates` queues the
two, so a test decides whether the bot learns of the upgrade from them or from a refused
write.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from typing import Any

from platforms.fakes._telegram_api import ApiError, int_param

UPGRADED = "Bad Request: group chat was upgraded to a supergroup chat"


class TelegramUpgrades:
    """The upgrade half of `FakeTelegram`, which holds ``upgraded`` and mixes this in."""

    upgraded: dict[str, int]
    """Upgraded groups: old chat id -> the supergroup's id."""
    _supergroup_ids: itertools.count[int]
    _chats: dict[str, dict[str, Any]]
    _message_ids: defaultdict[str, itertools.count[int]]
    _update_ids: itertools.count[int]

    # -- driving it from a test ------------------------------------------------------

    def upgrade_group(self, chat_id: int | str, *, supergroup_id: int | None = None) -> int:
        """Upgrade the group ``chat_id`` to a supergroup; returns the supergroup's id (a new
        ``-100…`` one unless given). From now on writes to the old id are refused as Telegram
        refuses them (see the module docstring)."""
        old = int(chat_id)
        if str(old) in self.upgraded:
            raise ValueError(f"chat {old} was upgraded already, to {self.upgraded[str(old)]}")
        new = supergroup_id if supergroup_id is not None else int(f"-100{next(self._supergroup_ids)}")
        title = self._chats.get(str(old), {}).get("title", f"Group {old}")
        self._chats[str(old)] = {"id": old, "type": "group", "title": title}
        self._chats[str(new)] = {"id": new, "type": "supergroup", "title": title}
        self.upgraded[str(old)] = new
        return new

    def upgrade_updates(self, chat_id: int | str, *, user_id: int = 1,
                        username: str = "alice") -> list[dict[str, Any]]:
        """Build (not queue) the two service messages of the upgrade of ``chat_id`` (by the user
        ``user_id``), the old chat's first, as updates."""
        old = int(chat_id)
        new = self.upgraded[str(old)]
        user = {"id": user_id, "is_bot": False, "first_name": username.title(), "username": username}
        return [self._service_update(self._chats[str(old)], user, migrate_to_chat_id=new),
                self._service_update(self._chats[str(new)], user, migrate_from_chat_id=old)]

    def push_upgrade_updates(self, chat_id: int | str, **kw: Any) -> list[int]:
        """Queue the two service messages of the upgrade of ``chat_id`` for ``getUpdates``;
        returns their update ids. Keywords as `upgrade_updates`."""
        queue = self.push_update  # type: ignore[attr-defined]
        return [queue(update) for update in self.upgrade_updates(chat_id, **kw)]

    def _service_update(self, chat: dict[str, Any], user: dict[str, Any], **fields: int) -> dict[str, Any]:
        message = {"message_id": next(self._message_ids[str(chat["id"])]), "date": int(time.time()), "chat": chat,
                   "from": user, **fields}
        return {"update_id": next(self._update_ids), "message": message}

    # -- the Bot API side ------------------------------------------------------------

    def _writable_chat(self, params: dict[str, Any]) -> int:
        """The ``chat_id`` of a call that writes to the chat; raises the Bot API's answer for an upgraded group."""
        chat_id = int_param(params, "chat_id")
        new = self.upgraded.get(str(chat_id))
        if new is not None:
            raise ApiError(400, UPGRADED, migrate_to_chat_id=new)
        return chat_id

    def _check_editable(self, params: dict[str, Any]) -> None:
        if str(int_param(params, "chat_id")) in self.upgraded:
            raise ApiError(400, "Bad Request: message can't be edited")
