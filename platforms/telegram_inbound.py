"""Which Telegram messages are for the bot, and the `Inbound` each becomes.

Apart from the adapter (`platforms.telegram`) because it is pure translation, the same for a
message alone, an album's lead item, polling and a webhook; the adapter hands in what it knows
(its id and username, the gateway's commands, the groups moved to supergroups).
"""

from __future__ import annotations

import re
from collections.abc import Container, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from aiogram.types import (
    Chat,
    ExternalReplyInfo,
    Giveaway,
    GiveawayWinners,
    Message,
    MessageOriginChannel,
    MessageOriginChat,
    MessageOriginHiddenUser,
    MessageOriginUser,
    PaidMediaInfo,
    RichBlockList,
    RichBlockTable,
)
from aiogram.types.rich_block_union import RichBlockUnion

from platforms import telegram_files
from platforms.base import Inbound
from platforms.formatting.blank import is_blank
from platforms.messages import display_name, replying, scalar_text
from platforms.telegram_entities import as_markdown
from platforms.telegram_supergroups import written_in

_GLUED = re.compile(r"^[^\w\s]+")
"""Punctuation right after a command ("/stop, please", "/new."): the sentence's. The gateway reads a
command up to the first space, so left there it would make "/stop," no command at all."""


def to_inbound(message: Message, event_id: str, *, bot_id: int, username: str, command_names: Container[str],
               moved_from: Mapping[str, str], max_attachment_bytes: int) -> Inbound | None:
    """The `Inbound` for a message the bot takes, its event ``event_id`` (`platforms.telegram`), under the group's
    chat id for a supergroup it became (``moved_from``); None for one that is not for the bot. One with neither text
    nor file is read as `content_as_text` says; one with nothing of that either (a service message) is not taken.
    Text or a caption that shows nothing (zero-width spaces, word joiners: `is_blank`) is none: a file is taken
    without it, and a message of it alone is not taken, as an empty one, rather than cost a turn of the model.
    What its formatting says the text does not, a link's address above all, is written in (`telegram_entities`)."""
    raw = (message.text if message.text is not None else message.caption) or ""
    forwarded = message.forward_origin is not None
    command = None if forwarded else _leading_command(message, raw)
    entities = message.entities if message.text is not None else message.caption_entities
    written = as_markdown(raw, entities, plain_to=_command_end(raw, command) if command else 0)
    written = "" if is_blank(written) else written
    attachments = telegram_files.attachments_of(message, max_attachment_bytes)
    text = written or ("" if attachments else content_as_text(message))
    if written and message.paid_media is not None:  # its caption alone read as if nothing came with it
        text = f"{written}\n{_paid_media(message.paid_media)}"
    # Written as a chat (an anonymous admin as the group, someone as their channel): that chat is
    # the sender, and ``from`` only one of Telegram's stand-in accounts (GroupAnonymousBot, a bot).
    user, sender = message.from_user, message.sender_chat
    if not (text or attachments) or message.is_automatic_forward:
        return None  # a linked channel's post, copied here by Telegram: written to the channel
    if sender is None and (user is None or user.is_bot):
        return None
    private = message.chat.type == "private"
    name, _, bot = (command or "").partition("@")
    if bot and bot.lower() != username:
        return None  # "/stop@otherbot": not for us
    if command and not (private or bot or name[1:].lower() in command_names):
        # Telegram hands a group's bare commands to the bot that spoke last there: another bot's
        # "/weather" is for us only if addressed to us, as any other message.
        command = None
    if command:
        rest = text[_command_end(raw, command) :]  # as written up to there (`as_markdown`)
        glued = next((i for i, c in enumerate(rest) if c.isspace() or not is_blank(c)), len(rest))
        rest = rest[glued:]  # invisible characters glued on, as punctuation is (`_command_end`)
        text = name + (" " if rest[:1].strip() else "") + rest
    # What the user wrote, not a venue's or poll's words: only a reply addresses the bot with a location.
    elif not private and not addressed(message, raw, bot_id=bot_id, username=username):
        return None
    topic = message.message_thread_id if message.is_topic_message else None
    here = str(message.chat.id)
    chat = moved_from.get(here, here)
    # An anonymous admin writes as the chat: once a group became a supergroup, as the supergroup. It is
    # the group's sender still, by the group's id: else the admins' allowed id stopped letting them in at
    # the upgrade, and their /stop no longer counted the messages they had waiting as their own.
    who = str(sender.id) if sender else str(user.id)
    return Inbound(
        platform="telegram",
        chat_id=chat,
        thread_id=str(topic) if topic is not None else None,
        user_id=moved_from.get(who, who) if sender else who,
        user_name=sender.username if sender else user.username,
        text=text,
        event_id=event_id,
        is_command=command is not None,
        forwarded=forwarded,
        is_private=private,
        attachments=attachments,
        sent_at=message.date.timestamp(),
        message_id=written_in(here, chat, message.message_id),
        reply_to=replied_to(message, chat),
        replied=reply_context(message, bot_id=bot_id),
    )


def replied_to(message: Message, chat: str) -> str | None:
    """The id (`written_in`) of the message ``message`` replies to, for the gateway's chat ``chat``; None for none,
    and for the head of its thread (a forum topic's creation, a channel post's copy heading its comments), which
    Telegram gives every message there as ``reply_to_message``, replied to or not. Not so the head of a reply chain
    (in a supergroup, in a forum's General topic): a reply there carries the id of the chain's first message as
    ``message_thread_id``, and one to that very message was written to it. A reply to a message of another topic
    of this forum (``external_reply``; Telegram gives such a reply its own topic's head as ``reply_to_message``)
    replies to that message: in a group, no answer to a question asked here (`gateway.questions`)."""
    external = message.external_reply
    if external is not None and external.message_id is not None and _same_chat(message, external.chat):
        return written_in(str(message.chat.id), chat, external.message_id)
    reply = message.reply_to_message
    if reply is None:
        return None
    if _heads_thread(message, reply):
        return None
    return written_in(str(message.chat.id), chat, reply.message_id)


def _heads_thread(message: Message, reply: Message) -> bool:
    """Whether ``reply``, ``message``'s ``reply_to_message``, is the head of its thread, replied to unasked
    (`replied_to`)."""
    return reply.message_id == message.message_thread_id and bool(message.is_topic_message
                                                                  or reply.is_automatic_forward)


def reply_context(message: Message, *, bot_id: int) -> str | None:
    """`Inbound.replied` of ``message``: the message it replies to, in this chat or another, or another topic
    (``external_reply``), as `replying` writes it; the part of it the user picked (``quote``) in its place, when
    they picked one. None for none, and for the head of its thread (`replied_to`), unless the user picked a part of
    it (a channel post's, under it). None too for a reply to the bot's own message, which the model has in its
    history as the bot wrote it, unless the user picked a part of it: that part is what they ask about. A file is
    named for what it is, as the model cannot see it here. A name anyone may set is written as `display_name`
    says: only a username reads as one."""
    picked = message.quote
    # Lone surrogates (JSON may spell one) become U+FFFD, one UTF-16 unit as they were: the entities still fit.
    quoted = as_markdown(scalar_text(picked.text), picked.entities) \
        if picked is not None and not is_blank(picked.text) else ""
    if (external := message.external_reply) is not None:
        who, own = _origin(external, bot_id)
        said = _media(external)  # the Bot API gives a message of another chat or topic without its text
    elif (reply := message.reply_to_message) is not None and _heads_thread(message, reply):
        who, own = _writer(reply, bot_id)
        said = ""  # replied to unasked: only the part of it the user picked
    elif reply is not None:
        who, own = _writer(reply, bot_id)
        raw = scalar_text((reply.text if reply.text is not None else reply.caption) or "")
        written = "" if is_blank(raw) else as_markdown(raw, reply.entities if reply.text is not None
                                                            else reply.caption_entities)
        said = "\n".join(filter(None, (written, _media(reply)))) or content_as_text(reply)
    else:
        return None
    if own:
        return replying("you", quoted) if quoted else None
    said = quoted or said
    return replying(who, said) if said else None


def _writer(message: Message, bot_id: int) -> tuple[str, bool]:
    """Who wrote ``message``, as the model may read it, and whether the bot did."""
    if message.sender_chat is not None:  # an anonymous admin, a channel: the chat is the sender
        return _chat_who(message.sender_chat), False
    user = message.from_user
    if user is None:
        return "someone", False
    return (f"@{user.username}" if user.username else display_name(user.full_name)), user.id == bot_id


def _origin(external: ExternalReplyInfo, bot_id: int) -> tuple[str, bool]:
    """Who wrote the message of another chat or topic ``external`` is, and whether the bot did."""
    origin = external.origin
    if isinstance(origin, MessageOriginUser):
        user = origin.sender_user
        return (f"@{user.username}" if user.username else display_name(user.full_name)), user.id == bot_id
    if isinstance(origin, MessageOriginHiddenUser):
        return display_name(origin.sender_user_name), False
    if isinstance(origin, MessageOriginChat):
        return _chat_who(origin.sender_chat), False
    if isinstance(origin, MessageOriginChannel):
        return _chat_who(origin.chat), False
    return "someone", False


def _chat_who(chat: Chat) -> str:
    """A chat writing as the sender, as `reply_context` names it: its title (`display_name`), else its username."""
    return display_name(chat.title) if chat.title else _chat_name(chat)


_REPLIED_FILES = (("photo", "a photo"), ("live_photo", "a photo"), ("video", "a video"),
                  ("animation", "an animation"), ("audio", "an audio file"), ("voice", "a voice message"),
                  ("video_note", "a video message"))


def _media(message: Message | ExternalReplyInfo) -> str:
    """The files of a replied message, named: ``(a photo)``, ``(a file: report.pdf)``; "" for none."""
    said = [f"({name})" for field, name in _REPLIED_FILES if getattr(message, field, None)]
    # Telegram sends an animation as a document too, for clients that know no animations: one file, named once.
    if (document := message.document) is not None and message.animation is None:
        said.append(f"(a file: {document.file_name})" if document.file_name else "(a file)")
    return " ".join(said)


def content_as_text(message: Message) -> str:
    """A message without text or file as the model may read it: a location (a venue's name and address
    with it), a contact, a poll with its options, a sticker's emoji, a dice roll, a game, a checklist, a
    giveaway or its winners (forwarded from a channel), an invoice, a rich message's words; paid media and a
    story, which a bot cannot see, as such. "" for anything else, a service message (a member joined, a pin, a
    payment) above all: the bot answers none. Never a command: each begins with an emoji or a parenthesis, but
    a rich message's words, which are its user's own."""
    if (venue := message.venue) is not None:
        at = venue.location
        return f"📍 {at.latitude}, {at.longitude} ({venue.title}, {venue.address})"
    if (at := message.location) is not None:
        return f"📍 {at.latitude}, {at.longitude}" + (" (live location)" if at.live_period else "")
    if (contact := message.contact) is not None:
        name = " ".join(filter(None, (contact.first_name, contact.last_name)))
        return f"👤 {name}, {contact.phone_number}"
    if (poll := message.poll) is not None:
        kind = "Quiz" if poll.type == "quiz" else "Poll"
        return "\n".join((f"📊 {kind}: {poll.question}", *(f"- {option.text}" for option in poll.options)))
    if (checklist := message.checklist) is not None:
        return "\n".join((f"☑️ Checklist: {checklist.title}", *(f"- {task.text}" for task in checklist.tasks)))
    if (sticker := message.sticker) is not None:
        return f"{sticker.emoji} (a sticker)" if sticker.emoji else "(a sticker)"
    if (dice := message.dice) is not None:
        return f"{dice.emoji} (a dice roll: {dice.value})"
    if (game := message.game) is not None:
        return f"🎮 Game: {game.title}: {game.description}"
    if message.giveaway is not None:
        return _giveaway(message.giveaway)
    if message.giveaway_winners is not None:
        return _giveaway_winners(message.giveaway_winners)
    if message.paid_media is not None:
        return _paid_media(message.paid_media)
    if message.story is not None:
        return "(a story, which the bot cannot see)"
    if (invoice := message.invoice) is not None:
        return f"🧾 Invoice: {invoice.title}: {invoice.description} ({_price(invoice.total_amount, invoice.currency)})"
    if message.rich_message is not None:
        return "\n".join(_rich_blocks(message.rich_message.blocks))
    return ""


def _giveaway(giveaway: Giveaway) -> str:
    chats = ", ".join(_chat_name(chat) for chat in giveaway.chats)
    countries = f" in {', '.join(giveaway.country_codes)}" if giveaway.country_codes else ""
    return (f"🎁 Giveaway: {_count(giveaway.winner_count, 'winner')} drawn on {_utc(giveaway.winners_selection_date)}"
            f" among the members of {chats}{countries}" + _prize(giveaway))


def _giveaway_winners(result: GiveawayWinners) -> str:
    names = [user.full_name + (f" (@{user.username})" if user.username else "") for user in result.winners]
    if result.winner_count > len(names):  # Telegram lists 100 at most
        names.append(f"and {result.winner_count - len(names)} more")
    return f"🏆 Giveaway winners in {_chat_name(result.chat)}: {', '.join(names)}" + _prize(result)


def _prize(giveaway: Giveaway | GiveawayWinners) -> str:
    prizes = [giveaway.prize_description or "",
              _count(giveaway.prize_star_count, "Star") if giveaway.prize_star_count else "",
              _count(giveaway.premium_subscription_month_count, "month") + " of Telegram Premium"
              if giveaway.premium_subscription_month_count else ""]
    return "; prize: " + ", ".join(filter(None, prizes)) if any(prizes) else ""


def _paid_media(paid: PaidMediaInfo) -> str:
    # Its items are previews until bought, and the bot buys nothing: only what it costs and holds is told.
    return (f"(paid media for {_count(paid.star_count, 'Star')}: {_count(len(paid.paid_media), 'item')},"
            " which the bot cannot see)")


def _price(amount: int, currency: str) -> str:
    # In the currency's smallest unit, whose size Telegram's currencies.json alone tells (cents for most).
    return _count(amount, "Star") if currency == "XTR" else f"{amount} {currency} in its smallest unit"


_RICH_MEDIA = {"photo": "a photo", "video": "a video", "animation": "an animation", "audio": "an audio file",
               "document": "a document", "voice_note": "a voice message", "map": "a map"}
"""A rich message's media blocks: not among the message's files, so the bot cannot see them."""


def _rich_blocks(blocks: Sequence[RichBlockUnion]) -> list[str]:
    """A rich message's blocks as lines of plain text: a list item after its label, a table row's cells
    between bars, a media block as what it is, with its caption; a divider, an anchor, buttons as nothing."""
    lines: list[str] = []
    for block in blocks:
        if isinstance(block, RichBlockList):
            for item in block.items:
                inner = _rich_blocks(item.blocks) or [""]
                lines += [f"{item.label} {inner[0]}", *(f"   {line}" for line in inner[1:])]
            continue
        if isinstance(block, RichBlockTable):
            lines += [" | ".join(_rich_text(cell.text) for cell in row) for row in block.cells]
        if block.type in _RICH_MEDIA:
            lines.append(f"({_RICH_MEDIA[block.type]}, which the bot cannot see)")
        for part in ("summary", "text", "expression"):
            lines.append(_rich_text(getattr(block, part, None)))
        lines += _rich_blocks(getattr(block, "blocks", None) or ())
        caption = getattr(block, "caption", None)
        lines += [_rich_text(getattr(caption, "text", caption)), _rich_text(getattr(caption, "credit", None)),
                  _rich_text(getattr(block, "credit", None))]
    return [line for line in lines if line.strip()]


def _rich_text(text: Any) -> str:
    """Rich text's words: a string, a list of rich texts, or one that formats, links or marks its ``text``; a
    custom emoji as its stand-in, a formula as written; an anchor (a place to link to) is none."""
    if text is None or isinstance(text, str):
        return text or ""
    if isinstance(text, list):
        return "".join(_rich_text(part) for part in text)
    for part in ("text", "button", "alternative_text", "expression"):
        if (value := getattr(text, part, None)) is not None:
            return _rich_text(value)
    return ""


def _chat_name(chat: Chat) -> str:
    return chat.title or (f"@{chat.username}" if chat.username else str(chat.id))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _utc(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _leading_command(message: Message, text: str) -> str | None:
    """The command ``text`` starts with (``/stop``, ``/stop@bot``) as Telegram marked it: its
    ``bot_command`` entity, which ends where a username can go on no further ("/stop@bot, please").
    None when the text starts with none."""
    entities = message.entities if message.text is not None else message.caption_entities
    lead = next((e for e in entities or () if e.type == "bot_command" and e.offset == 0), None)
    return lead.extract_from(text) if lead else None


def _command_end(text: str, command: str) -> int:
    """Where the command ``text`` starts with ends, with the punctuation glued to it (`_GLUED`), but for the
    invisible characters that end it: a link preview's zero-width space after "/new" is its link (`as_markdown`)."""
    glued = _GLUED.match(text[len(command) :])
    run = glued.group() if glued else ""
    while run and is_blank(run[-1]):
        run = run[:-1]
    return len(command) + len(run)


def addressed(message: Message, text: str, *, bot_id: int, username: str) -> bool:
    """A group message meant for the bot: a reply to it, or a mention of it."""
    reply = message.reply_to_message
    # In forum topics every message "replies" to the topic's first message: not to us.
    if reply and reply.from_user and reply.from_user.id == bot_id and not reply.forum_topic_created:
        return True
    if _replies_across_topics_to(message, bot_id):
        return True
    handle = f"@{username}"
    for entity in message.entities or message.caption_entities or ():
        if entity.type == "mention" and entity.extract_from(text).lower() == handle:
            return True
        if entity.type == "text_mention" and entity.user is not None and entity.user.id == bot_id:
            return True
    return bool(username) and re.search(rf"(?<![\w@]){re.escape(handle)}\b", text, re.I) is not None


def _replies_across_topics_to(message: Message, bot_id: int) -> bool:
    """A reply to the bot's message in another topic of this forum: the Bot API gives it as ``external_reply``
    (a reply "from another chat or forum topic"), not as ``reply_to_message`` (there its own topic's head, as for
    every message of a topic but General's). A message of another chat quoted
    here is not one: it was not written to the bot where it was written."""
    external = message.external_reply
    if external is None or not _same_chat(message, external.chat):
        return False
    origin = external.origin
    return isinstance(origin, MessageOriginUser) and origin.sender_user.id == bot_id


def _same_chat(message: Message, chat: Chat | None) -> bool:
    """Whether ``chat`` (an ``external_reply``'s, given for a supergroup or channel only) is ``message``'s own."""
    return chat is not None and chat.id == message.chat.id
