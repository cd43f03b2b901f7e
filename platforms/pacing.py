"""How fast an adapter's platform lets the gateway write: an adapter that is `Paced` gives the
`Pacing` of each chat (and of the whole account), which the outbox keeps to; one that also writes
to chats itself (`WritesAside`, `WaitsAside`) has those writes counted in and waiting their turn."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Pacing:
    """How far apart the platform wants calls for one chat (and, ``account_*``, for all of them)."""

    call_interval: float = 0.0
    """Seconds between any two calls (sends, edits, deletes) to the chat."""
    edit_interval: float = 0.0
    """Seconds between two edits of the same message."""
    account_edit_interval: float = 0.0
    """Seconds between two edits in any of the bot's chats: a limit on the account, not the chat
    (Slack's ``chat.update``, 50 a minute per workspace)."""
    account_file_interval: float = 0.0
    """Seconds between two file sends in any of the bot's chats (Slack's upload methods)."""
    account_delete_interval: float = 0.0
    """Seconds between two deletions in any of the bot's chats, the adapter's own included (`WaitsAside`):
    Slack's ``chat.delete``, 50 a minute per workspace."""
    account_lookup_interval: float = 0.0
    """Seconds between two looks, in any of the bot's chats, for whether a part went out already
    (`platforms.base.FindsSent`): Slack's ``conversations.history`` and ``conversations.replies``, 50 a
    minute per workspace. After an outage every chat whose post lost its answer looks at once, and a
    lookup refused twice is sent blind: spaced, they are not refused."""


@runtime_checkable
class Paced(Protocol):
    """An adapter whose platform limits how fast one chat may be written to."""

    def pacing(self, chat_id: str) -> Pacing:
        """The limits for this chat (they may differ between private chats and groups)."""


@runtime_checkable
class WritesAside(Protocol):
    """A `Paced` adapter that also writes to chats itself, outside the outbox (Slack's "working"
    placeholder is a message): those writes count against the chat's pacing as the outbox's do,
    or the outbox's next call to the chat would be refused."""

    def bind_writes(self, wrote: Callable[..., None]) -> None:
        """Called once, before `Adapter.start`, with ``wrote``, which the adapter calls with the
        chat id as such a write starts and again once answered (it counts from both);
        ``wrote(chat_id, op="delete")`` for a deletion, counted only against the platform-wide
        spacing of deletions (`Pacing.account_delete_interval`); ``wrote(chat_id, op="delete",
        refused_for=seconds)`` when the platform refused one with a 429: every deletion, the
        outbox's and the adapter's in any chat, waits that long."""


@runtime_checkable
class WaitsAside(Protocol):
    """A `WritesAside` adapter whose own writes also wait their turn: without it, such a write right
    after the outbox's message to the chat is refused (Slack's placeholder drew a 429 so)."""

    def bind_turns(self, turn: Callable[..., Awaitable[None]]) -> None:
        """Called once, before `Adapter.start`, with ``turn``: awaited with the chat id, it returns
        once a progress write to the chat may go by the outbox's pacing and 429s;
        ``turn(chat_id, op="delete")``, once a deletion may go by the platform-wide spacing of
        deletions (the outbox's included), the chat's own pace aside."""
