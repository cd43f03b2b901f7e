"""Albums (several photos or files sent at once) held until all their items are in, so each is
handed over as one message.

Telegram sends each item of an album as an update of its own, all with one ``media_group_id``,
and its long poll answers as soon as the first update is there: the other items often come in
the next answer. Nothing says how many items an album has, so an album is held until none of
its items came for ``wait`` seconds (a client sends an album's items together).

Meanwhile nothing from the oldest update held on is confirmed: the polls that look for more
items ask from that update on (its ``offset``) without waiting (``timeout`` 0), and only the
updates no answer carried before go on to the dispatcher. A process stopped while an album is
held is served it again after a restart, whole. Albums of other chats, and other messages, are
not held back: they go on with the next look, at most ``wait`` seconds later, after the albums
complete by then. A message of the
album's sender in its chat hands the album over first (it was written after it); another member's
does not, since in a group it may come between two items of the album.

Telegram takes a caption per item (apps put one on the first): the album's text is every
distinct caption, in album order, one paragraph each (`captions_of`), their entities moved along
with them, so that a mention or a command in any of them reads as in a message.

A webhook gets an album's items as requests of their own, over several connections at once
(`AlbumGather`): each request waits, unanswered, until no item of its album came for ``wait``
seconds; the album is then handed over once, and every item's request answered as that went (not
recorded, it answers them all 500 or 503, and Telegram delivers them again). A message of the album's sender in
its chat posted meanwhile waits for the album (`AlbumGather.after`), so it reaches the gateway after it.
Telegram may deliver an album's items again apart (their answers were lost), and each then gathers
alone: the album is handed over with every item's update id (`Inbound.aliases`), by which the gateway
knows each item of an album it recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Collection

from aiogram.methods import GetUpdates
from aiogram.types import Message, MessageEntity, Update

from platforms.base import utf16_length
from platforms.telegram_webhook import NotTaken

WAIT = 1.0
"""Seconds without a new item after which an album is taken as complete."""

Album = list[tuple[Message, int]]
"""An album's items so far, with their update ids, in order."""

CAPTION_SEPARATOR = "\n\n"


def captions_of(items: list[Message]) -> tuple[str, list[MessageEntity]]:
    """The album's captions as one text, each distinct one once, in order, and their entities,
    offsets moved to where each caption now starts (in UTF-16 units, as Telegram counts them)."""
    text, entities, seen = "", [], set()
    for item in items:
        if not item.caption or item.caption in seen:
            continue
        seen.add(item.caption)
        if text:
            text += CAPTION_SEPARATOR
        shift = utf16_length(text)
        entities += [e.model_copy(update={"offset": e.offset + shift}) for e in item.caption_entities or ()]
        text += item.caption
    return text, entities


class AlbumHold:
    def __init__(self, *, wait: float = WAIT) -> None:
        self.wait = wait
        self._albums: dict[str, Album] = {}
        self._due: dict[str, float] = {}
        """When each album is taken as complete, unless another item comes."""
        self._served_up_to = 0
        """The newest update id a poll answered with: a later poll hands on only those after it."""

    def reset(self) -> None:
        """Polling (re)starts: what an earlier run held was never confirmed, Telegram serves it again."""
        self._albums, self._due, self._served_up_to = {}, {}, 0

    def hold(self, message: Message, update_id: int) -> None:
        assert message.media_group_id is not None
        self._albums.setdefault(message.media_group_id, []).append((message, update_id))
        self._due[message.media_group_id] = asyncio.get_running_loop().time() + self.wait

    def take(self, *, after: Message | None = None, due_by: float | None = None,
             but: Collection[str | None] = ()) -> list[Album]:
        """The albums held (those ``after`` was written after: of its chat and sender, other than its
        own album; complete by ``due_by``; none of ``but``), no longer held, oldest first."""
        taken = [group for group, items in self._albums.items()
                 if (after is None or _same_sender(items[0][0], after) and group != after.media_group_id)
                 and (due_by is None or self._due[group] <= due_by) and group not in but]
        for group in taken:
            del self._due[group]
        return sorted((self._albums.pop(group) for group in taken), key=lambda album: album[0][1])

    async def poll(self, get_updates: Callable[[GetUpdates], Awaitable[list[Update]]], method: GetUpdates,
                   hand_over: Callable[[Album], Awaitable[None]]) -> list[Update]:
        """What aiogram's ``method`` (its next getUpdates, confirming all it handled) should answer.
        While albums are held: the updates that came after them (more items, other messages),
        the albums complete by then handed over (``hand_over``) first."""
        loop = asyncio.get_running_loop()
        while self._albums:
            await asyncio.sleep(max(0.0, min(self._due.values()) - loop.time()))
            oldest = min(items[0][1] for items in self._albums.values())
            look = method.model_copy(update={"offset": oldest, "timeout": 0})
            fresh = [u for u in await get_updates(look) if u.update_id > self._served_up_to]
            if fresh:
                self._served_up_to = fresh[-1].update_id
                # The albums complete by now go first (their items came before these), but one with an item
                # among these: on a busy bot nearly every look finds something new, and a complete album
                # waited until a look's 100 updates had all gone past it.
                coming = {u.message.media_group_id for u in fresh if u.message is not None}
                for album in self.take(due_by=loop.time(), but=coming):
                    await hand_over(album)
                return fresh
            for album in self.take(due_by=loop.time()):
                await hand_over(album)
        updates = await get_updates(method)
        if updates:
            self._served_up_to = max(self._served_up_to, updates[-1].update_id)
        return updates


def _same_sender(message: Message, other: Message) -> bool:
    """Whether both are of one chat and sender (a user, or a chat someone writes as)."""
    def sender(m: Message) -> int | None:
        return m.sender_chat.id if m.sender_chat else m.from_user.id if m.from_user else None
    return message.chat.id == other.chat.id and sender(message) == sender(other)


@dataclasses.dataclass
class _Gathering:
    first: Message
    items: Album
    last: float
    """When the latest item came."""
    done: asyncio.Future[None]


class AlbumGather:
    """Webhook: the items of each album, gathered from their requests."""

    def __init__(self, *, wait: float = WAIT) -> None:
        self.wait = wait
        self._gathering: dict[str, _Gathering] = {}

    def gathering(self, chat: int) -> bool:
        """Whether an album of ``chat`` is being gathered now."""
        return any(g.first.chat.id == chat for g in self._gathering.values())

    async def after(self, message: Message) -> None:
        """Returns once the albums of the chat and sender of ``message`` being gathered now (but its
        own) were handed over, or failed to be: ``message`` was written after them, and handed over
        first its turn would be interrupted by theirs."""
        for group, gathering in list(self._gathering.items()):
            if _same_sender(gathering.first, message) and group != message.media_group_id:
                with contextlib.suppress(Exception):  # answered 500 to their own requests
                    await asyncio.shield(gathering.done)

    async def join(self, message: Message, update_id: int, hand_over: Callable[[Album], Awaitable[None]]) -> None:
        """Returns once the album of ``message`` was handed over (``hand_over``, by the request of
        its first item to come), items in order; raises what that raised."""
        assert message.media_group_id is not None
        loop, group = asyncio.get_running_loop(), message.media_group_id
        gathering = self._gathering.get(group)
        if gathering is not None:
            # Telegram delivers an item again while its first request is still unanswered (it waited too
            # long): the album holds it once, or its file came twice, and the request with it.
            if all(known != update_id for _, known in gathering.items):
                gathering.items.append((message, update_id))
                gathering.last = loop.time()
            return await asyncio.shield(gathering.done)
        gathering = _Gathering(message, [(message, update_id)], loop.time(), loop.create_future())
        self._gathering[group] = gathering
        # Read, so that a failure no other request waits for is not reported as never retrieved.
        gathering.done.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            while (left := gathering.last + self.wait - loop.time()) > 0:
                await asyncio.sleep(left)
            del self._gathering[group]
            await hand_over(sorted(gathering.items, key=lambda item: item[1]))
        except BaseException as exc:
            if self._gathering.get(group) is gathering:
                del self._gathering[group]
            # Cancelled (the server stopping): the items' requests are answered as not taken, for Telegram to retry.
            gathering.done.set_exception(exc if isinstance(exc, Exception) else NotTaken("stopped"))
            raise
        gathering.done.set_result(None)
