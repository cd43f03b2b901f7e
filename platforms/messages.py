"""The messages an adapter and the gateway pass each other: `Inbound`, `Outbound`, their files, `Sent`.

Plain frozen values, no I/O: an `Inbound` is stored as JSON in the gateway's inbox and replayed after a
restart, so it and its `Attachment` read back as they were written (`Inbound.to_json`, `from_json`); every
text field of an `Inbound` is made a string of Unicode scalar values once, at construction
(`scalar_text`), so no lone surrogate reaches the store or another platform.

Apart from `platforms.base`, which holds what adapters do (the `Adapter` protocol, its optional
features, the errors they raise): these are what passes between them. `platforms.base` re-exports
every name here, so ``from platforms.base import Inbound`` goes on working in adapters and plugins.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

import regex

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


_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogates(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point, so it is not a string of Unicode scalar
    values: it cannot be encoded as UTF-8 (SQLite, JSON for other programs, sockets refuse it)."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def scalar_text(text: str) -> str:
    """``text`` as Unicode scalar values: a surrogate pair spelt as two code points is joined
    into the character it encodes, a lone surrogate becomes U+FFFD. Anything else is kept."""
    if not has_surrogates(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


@dataclass(frozen=True, slots=True)
class Inbound:
    """One user message or command, as the gateway sees it.

    Every text field is a string of Unicode scalar values: whatever an SDK handed over
    (JSON may spell a lone surrogate as ``"\\ud800"``, a terminal may pass undecodable
    bytes as surrogate escapes), construction replaces lone surrogates with U+FFFD
    (`scalar_text`), so no such string reaches the store or another platform.
    """

    platform: str
    chat_id: str
    thread_id: str | None
    """A thread within the chat that is its own session (Slack/Discord threads); None otherwise."""
    user_id: str
    user_name: str | None
    """The sender's name as the platform vouches for it — on Telegram and Discord the username no one
    else holds, which ``allowed_users`` may list — never a display name or nickname, which anyone can
    set to anything. None where the platform has no such name."""
    text: str
    event_id: str
    """The platform's id for this event, unique per platform: the durable inbox drops repeats."""
    is_command: bool = False
    """A slash command or interaction (``/stop``, ``/new``, ...); ``text`` holds it as ``/name args``."""
    forwarded: bool = False
    """Written elsewhere and forwarded here (Telegram's ``forward_origin``, Discord's forward): its text is read
    as a message, never as a command, though it start with ``/new``."""
    is_private: bool = True
    """A direct message rather than a group or channel."""
    reply_token: str | None = None
    """Opaque, adapter-specific: how to answer this command (an interaction token, a response URL)."""
    attachments: tuple[Attachment, ...] = ()
    """Files sent with the message (``text`` is then the caption, possibly empty)."""
    sent_at: float | None = None
    """When the person sent it, by the platform's clock (epoch seconds); None where the platform
    does not say. Older than the gateway's receipt when the platform held it (the gateway was down)."""
    message_id: str | None = None
    """The platform's id of the message itself, which an answer may quote (`Outbound.reply_to`): a
    Telegram message id, a Discord message id; None where the adapter cannot quote one."""
    reply_to: str | None = None
    """The `message_id` of the message this one replies to, where the platform says (a Telegram reply, a
    Discord reply), in the scheme of `message_id` and of the bot's own messages' `Sent.message_id`; None for
    none (Slack has none), and for the head of its thread, which every message of a Telegram forum topic or
    comment thread replies to unasked. In a group, a reply to another message than the bot's question is no
    answer to it (`gateway.questions`)."""
    replied: str | None = None
    """The message this one replies to as the model reads it before the user's text (`replying`): who wrote it
    and its text, or the part of it the user quoted (Telegram's quote); None for none, for a reply to the bot's
    own message (the model has it in its history) and for the head of a thread every message replies to unasked
    (as `reply_to`), either unless the user quoted part of it. Context only: commands, questions' answers and the
    blank check read ``text`` alone."""
    aliases: tuple[str, ...] = ()
    """The ids under which this very message may be delivered again, in ``event_id``'s scheme, when the
    adapter made it of several platform events that may come again apart (a Telegram album: one update
    per item): the id of every one of them, ``event_id`` among them. The inbox records them with the
    event, and drops a message all of whose ids it has recorded. Empty (most messages) for a message
    that is one event: ``event_id`` says it all, and the inbox looks up nothing more."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field; `from_json` reads it back."""
        data = {f: getattr(self, f) for f in _INBOUND_FIELDS}
        data["attachments"] = [a.to_json() for a in self.attachments]
        data["aliases"] = list(self.aliases)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Inbound:
        """The Inbound `to_json` wrote; unknown keys are ignored, missing optional ones default."""
        fields = {k: v for k, v in data.items() if k in _INBOUND_FIELDS}
        fields["attachments"] = tuple(Attachment.from_json(a) for a in data.get("attachments") or ())
        fields["aliases"] = tuple(data.get("aliases") or ())
        return cls(**fields)

    def __post_init__(self) -> None:
        for name in _TEXT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, str) and has_surrogates(value):
                object.__setattr__(self, name, scalar_text(value))  # frozen: construction is the one place


REPLIED_CHARS = 1000
"""How much of a replied message `Inbound.replied` holds: the head of a long one is what a reply is about, most
often, and the whole (up to 4,096 characters on Telegram) would cost the model's context at every such reply."""


def replying(who: str, said: str) -> str:
    """`Inbound.replied` of a reply to ``said``, written by ``who``: ``(replying to @alice) said``, ``said`` cut to
    `REPLIED_CHARS` characters and an ellipsis, at a space when one is near the cut."""
    if len(said) > REPLIED_CHARS:
        cut = _whole(said, REPLIED_CHARS)
        space = cut.rfind(" ", REPLIED_CHARS - 100)
        said = (cut[:space] if space > 0 else cut).rstrip() + "…"
    return f"(replying to {who}) {said}"


_CLUSTER = regex.compile(r"\X")


def _whole(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters between two grapheme clusters: a flag cut after its first
    regional indicator reads as a lone letter, a family emoji as one person. A single cluster longer than that
    (a letter under thousands of marks) is cut where it must be."""
    end = 0
    for match in _CLUSTER.finditer(text, 0, limit + 64):  # a cluster across ``limit`` ends past it
        if match.end() > limit:
            break
        end = match.end()
    return text[:end or limit]


_NOT_A_NAME = re.compile(
    r"^[\s\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff@\ufe6b\uff20]+")
"""Spaces, Unicode's format characters (zero-width and direction marks, as `gateway.senders` knows them) and at signs
(also the small and fullwidth ones) opening a name."""


def display_name(name: str) -> str:
    """A name anyone may set (a Telegram user's or chat's, a Discord display name) as `replying`'s ``who``: what
    opens it blank, invisible or an at sign taken off, so that it never reads as a username the platform vouches
    for (``@alice``, `Inbound.user_name`); "someone" when nothing is left."""
    return _NOT_A_NAME.sub("", name).strip() or "someone"


_INBOUND_FIELDS = tuple(f for f in Inbound.__dataclass_fields__ if f not in ("attachments", "aliases"))
_TEXT_FIELDS = tuple(f.name for f in fields(Inbound) if f.type in ("str", "str | None"))


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
    reply_to: str | None = None
    """The `Inbound.message_id` this message answers: an adapter that can shows it as a reply to
    (a quote of) that message, and sends it all the same, unquoted, when that message is gone.
    Adapters that cannot quote ignore it."""
    private: bool = False
    """An answer through ``reply_token`` for the command's user alone (a refusal): never shown to its chat.
    Journaled with the part, so a restart sends it as privately (`gateway.outbox_part.answers_privately`)."""


@dataclass(frozen=True, slots=True)
class OutboundFile:
    """A file to upload with a message part (`SendsFiles.send_file`): the gateway's own copy,
    which stays in place until the send is settled."""

    path: str
    """Where the bytes are: a file only the gateway writes, never the agent's workspace."""
    name: str
    """The name the chat shows (the file's name in the workspace)."""
    size: int
    """Bytes; the gateway has checked it against `SendsFiles.upload_limit`."""


@dataclass(frozen=True, slots=True)
class Sent:
    message_id: str
    """The platform's id of the message, for later edits."""
