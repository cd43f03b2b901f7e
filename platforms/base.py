"""The adapter protocol: what every platform adapter gives the gateway and takes from it.

Adapters translate at their edges only: a platform event becomes an `Inbound`, an
`Outbound` becomes one platform message. Outbound text is the agent's Markdown; an
adapter renders it in its platform's markup when it sends it (`platforms.formatting`)
and measures it the same way. Splitting to the text limit, retries,
pacing, dedup and access control are the gateway's; an adapter reports what the
platform said through the errors below, translated once, in one place.

    DeliveryError                 a send/edit/typing call failed
    ├── RateLimited               429: ``retry_after`` seconds
    ├── MessageTooLong            the platform refused the length
    ├── Forbidden                 blocked by the user, not in the channel, missing permissions
    ├── NotFound                  unknown chat, or the message to edit is gone
    ├── EditUnsupported           this platform or message cannot be edited
    ├── NetworkError              connection dropped, 5xx: worth retrying
    ├── BadRequest                anything else the platform rejected: not worth retrying
    └── AttachmentTooLarge        a file over the size cap: ``size`` and ``limit`` in bytes

Optional capabilities beyond the protocol, each a small Protocol below:

- `SupportsDownload`: the adapter fetches a user's file (`Attachment`) through the
  platform's API, refusing anything over its ``max_attachment_bytes``.
- `SupportsDelete`: the adapter deletes a message it sent.
- an adapter that answers in threads without being mentioned again (Slack) defines
  ``remember_threads(threads)``. Before `start`, the gateway hands it the
  ``(chat_id, thread_id)`` pairs of the thread sessions it has stored, most recently
  active last, so that after a restart those threads are still answered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

OutboundKind = Literal["reply", "interim", "notice", "completion", "command"]
AttachmentKind = Literal["image", "document", "voice"]
DEFAULT_MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file a user sent with a message: what it is and how to fetch it, never its bytes.

    Plain values only, so an `Inbound` with attachments is stored as JSON in the gateway's
    inbox and still names a fetchable file when it is replayed after a restart."""

    kind: AttachmentKind
    """``image`` (a photo or picture the model may see), ``voice`` (a recorded voice message),
    ``document`` (any other file)."""
    name: str
    """The file name the user's client gave, or one the adapter made up (``photo-<id>.jpg``)."""
    mime_type: str | None
    size: int | None
    """Bytes, when the platform says; the download checks the real size too."""
    ref: str
    """Adapter-specific: what `SupportsDownload.download` needs (a Telegram ``file_id``, a Slack
    file id, a Discord attachment URL)."""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "mime_type": self.mime_type, "size": self.size,
                "ref": self.ref}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Attachment:
        return cls(data["kind"], data["name"], data.get("mime_type"), data.get("size"), data["ref"])


@dataclass(frozen=True, slots=True)
class Inbound:
    """One user message or command, as the gateway sees it."""

    platform: str
    chat_id: str
    thread_id: str | None
    """A thread within the chat that is its own session (Slack/Discord threads); None otherwise."""
    user_id: str
    user_name: str | None
    text: str
    event_id: str
    """The platform's id for this event, unique per platform: the durable inbox drops repeats."""
    is_command: bool = False
    """A slash command or interaction (``/stop``, ``/new``, ...); ``text`` holds it as ``/name args``."""
    is_private: bool = True
    """A direct message rather than a group or channel."""
    reply_token: str | None = None
    """Opaque, adapter-specific: how to answer this command (an interaction token, a response URL)."""
    attachments: tuple[Attachment, ...] = ()
    """Files sent with the message (``text`` is then the caption, possibly empty)."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field; `from_json` reads it back."""
        data = {f: getattr(self, f) for f in _INBOUND_FIELDS}
        data["attachments"] = [a.to_json() for a in self.attachments]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Inbound:
        """The Inbound `to_json` wrote; unknown keys are ignored, missing optional ones default."""
        fields = {k: v for k, v in data.items() if k in _INBOUND_FIELDS}
        fields["attachments"] = tuple(Attachment.from_json(a) for a in data.get("attachments") or ())
        return cls(**fields)


_INBOUND_FIELDS = tuple(f for f in Inbound.__dataclass_fields__ if f != "attachments")


@dataclass(frozen=True, slots=True)
class Outbound:
    """One message part, already split to the adapter's limit by the gateway."""

    chat_id: str
    thread_id: str | None
    text: str
    kind: OutboundKind = "reply"
    silent: bool = False
    """Deliver without a notification sound where the platform can (notices)."""
    reply_token: str | None = None
    """Set on answers to commands: the adapter may answer through the command's own channel."""
    idempotency_key: str | None = None
    """Stable across retries of the same part; adapters pass it on where the platform can dedupe (nonces)."""
    turn_id: str | None = None
    """The gateway turn this message belongs to."""
    sequence: int = 0
    """Position of this message among the turn's messages, from 0."""


@dataclass(frozen=True, slots=True)
class Sent:
    message_id: str
    """The platform's id of the message, for later edits."""


@dataclass(frozen=True, slots=True)
class DisplayTier:
    """An adapter's built-in display defaults (the third step of display resolution)."""

    interim_assistant_messages: bool
    long_running_notifications: bool | Literal["generic"]
    messaging: bool
    """A chat platform people message like a person (Telegram, Slack, Discord): ``gateway_mode: auto``
    delegates inline there when interim messages are off."""


class DeliveryError(Exception):
    def __init__(self, message: str, *, method: str | None = None, chat_id: str | None = None):
        super().__init__(message)
        self.method = method
        self.chat_id = chat_id


class RateLimited(DeliveryError):
    def __init__(self, message: str, *, retry_after: float, **kw: Any):
        super().__init__(message, **kw)
        self.retry_after = retry_after


class MessageTooLong(DeliveryError): ...


class Forbidden(DeliveryError): ...


class NotFound(DeliveryError): ...


class EditUnsupported(DeliveryError): ...


class NetworkError(DeliveryError): ...


class BadRequest(DeliveryError): ...


class AttachmentTooLarge(DeliveryError):
    def __init__(self, message: str, *, size: int | None, limit: int, **kw: Any):
        super().__init__(message, **kw)
        self.size = size
        """Bytes of the file, when known (the platform said, or the download ran past the limit)."""
        self.limit = limit


@dataclass(frozen=True, slots=True)
class Accepted:
    """What the gateway answers for an accepted inbound event (webhooks return it to the caller)."""

    turn_id: str | None
    """The turn the event starts or joins; None for commands and dropped duplicates."""
    session: str
    """The gateway session key (platform, chat, thread)."""
    duplicate: bool = False


InboundSink = Callable[[Inbound], Awaitable[Accepted | None]]


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """A chat command the gateway serves, for platforms that register them (setMyCommands, slash commands)."""

    name: str
    description: str


@runtime_checkable
class Adapter(Protocol):
    name: str
    """The platform name used in config (``telegram``, ``slack``, ``discord``, ``webhook``, ``local``, ``web``)."""
    tier: DisplayTier
    text_limit: int
    """Largest message the platform accepts, in the adapter's own `measure` units."""
    typing_interval: float
    """Seconds after which a typing indicator lapses; the gateway refreshes it a little sooner.
    0: the platform shows no progress at all, and the gateway calls neither `typing` nor `idle`."""

    def measure(self, text: str) -> int:
        """Length of the Markdown ``text`` as the platform counts it once the adapter has rendered
        it (Telegram: UTF-16 code units of the text after entity parsing)."""

    async def start(self, sink: InboundSink, commands: Sequence[CommandSpec] = ()) -> None:
        """Connect, register ``commands`` where the platform has them, and begin
        delivering events to ``sink``; returns once connected. Events are handed
        over one at a time per chat, in order; ``sink`` returns quickly (it only
        records and queues)."""

    async def stop(self) -> None:
        """Stop receiving, close connections. Idempotent."""

    async def send(self, message: Outbound) -> Sent:
        """Send one part, rendered for the platform; raises a `DeliveryError` subclass on failure.
        A part whose formatting the platform refuses goes once more as plain text."""

    async def edit(self, chat_id: str, thread_id: str | None, message_id: str, text: str) -> None:
        """Replace a sent message's text; "not modified" counts as success. Raises
        `EditUnsupported` where editing is impossible, so the gateway sends anew."""

    async def typing(self, chat_id: str, thread_id: str | None) -> None:
        """Show a typing or progress indicator once; the gateway refreshes it every
        `typing_interval` seconds while a turn runs. May do nothing."""

    async def idle(self, chat_id: str, thread_id: str | None) -> None:
        """The chat's turn has ended and its last message was sent: clear any progress
        indicator so none is left behind stale. May do nothing."""

    def web_routes(self) -> Sequence[Any]:
        """aiohttp route definitions to mount on the gateway's HTTP server (webhook modes); may be empty."""


@runtime_checkable
class SupportsDownload(Protocol):
    """An adapter that fetches the files users send."""

    max_attachment_bytes: int
    """Files larger than this are refused, before or during the download."""

    async def download(self, attachment: Attachment) -> bytes:
        """The file's bytes, through the platform's own API. Raises `AttachmentTooLarge` for a
        file over ``max_attachment_bytes`` (nothing beyond the limit is read), another
        `DeliveryError` when the platform refuses or cannot be reached."""


@runtime_checkable
class SupportsDelete(Protocol):
    """An adapter that deletes messages it sent."""

    async def delete(self, chat_id: str, thread_id: str | None, message_id: str) -> None:
        """Delete one of the bot's messages; one that is already gone counts as deleted.
        Raises a `DeliveryError` otherwise (`Forbidden`, `RateLimited`, `NetworkError`...)."""


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units: what Telegram counts."""
    return len(text.encode("utf-16-le")) // 2
