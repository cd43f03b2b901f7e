"""Which Discord messages are for the bot, and the `Inbound` each becomes.

Apart from the adapter (`platforms.discord`) because it is pure translation, the same for a live
message and one a catch-up finds; the adapter keeps what it needs to know (the bot's user, the
channels it posted in, the text commands, the chat of each thread the gateway knows) and hands it in.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Container, Sequence
from typing import Any

from platforms import discord_files, discord_mentions
from platforms.base import Inbound
from platforms.discord_mentions import user_name
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.formatting.blank import is_blank, trimmed
from platforms.messages import display_name, replying

log = logging.getLogger("platforms.discord")

ThreadChat = Callable[[int], str | None]
"""The chat (parent channel) of a thread the gateway knows, by the thread's id; None for any other channel."""


def _no_thread(_: int) -> str | None:
    return None


def inbound_of(message: discord.Message, me: discord.ClientUser | None, *, posted_in: Container[int],
               text_commands: Container[str], no_content: Callable[[], None],
               thread_chat: ThreadChat = _no_thread, answers: Container[int] = ()) -> Inbound | None:
    """The event for the gateway, if the message is for the bot (`addressed`); a live one and one caught up alike.
    One with neither text nor files is read as its stickers, poll and embeds say (`content_as_text`), a forward of
    display components as their words (`components_text`); one that said only the bot's mention is heard as that
    mention (``@Switchboard``), so is one that said beside it only what shows nothing (a zero-width space); buttons or
    menus alone are passed over (logged at DEBUG), as is text of invisible characters alone, and ``no_content`` is
    told of a guild message for the bot that came with nothing at all, its content withheld. A message in a thread
    discord.py does not hold is read as in that thread when ``thread_chat`` knows it (`chat_of`)."""
    if me is None or message.author.bot or message.author.id == me.id:
        return None
    if message.type not in (discord.MessageType.default, discord.MessageType.reply):
        return None
    # Discord's picker offers the bot's own role (its name, tags.bot_id) beside the bot: either addresses it.
    own_role = next((r for r in message.role_mentions if r.tags is not None and r.tags.bot_id == me.id), None)
    mentioned = own_role is not None or any(user.id == me.id for user in message.mentions)
    guild = in_guild(message)
    if guild and not (mentioned or addressed(message, me.id, posted_in, text_commands, thread_chat, answers)):
        return None
    own = rf"<@!?{me.id}>" + (f"|<@&{own_role.id}>" if own_role is not None else "")
    text = named(_shown(re.sub(own, "", message.content)), message, me)
    attachments = discord_files.attachments_of(message.attachments)
    # A forward is an empty message holding a snapshot of the one forwarded: that is what was sent. A bot's message
    # of display components holds its words there, its content empty, and its files as attachments all the same.
    for snapshot in message.message_snapshots:
        said = (_shown(snapshot.content), components_text(snapshot.components))
        text = "\n\n".join(filter(None, (text, *(named(part, message, me) for part in said))))
        attachments += discord_files.attachments_of(snapshot.attachments)
    text = text or ("" if attachments else content_as_text(message))
    if not text and not attachments and not is_blank(message.content):
        # Only the bot's mention: someone calling it, who waits for an answer as to "hello" (passed over, they heard
        # nothing), and the model reads the mention better than an empty message.
        text = f"@{me.display_name}"
    if not text and not attachments:
        if not_text := _other_content(message):
            log.debug("discord: message %s holds %s only: not answered", message.id, not_text)
        elif message.content:  # not withheld: Discord withholds content as none at all
            log.debug("discord: message %s shows nothing, only invisible characters: not answered", message.id)
        elif guild and not mentioned:
            no_content()
        return None
    chat_id, thread_id = chat_of(message.channel, message.channel.id, thread_chat)
    return Inbound(
        platform="discord", chat_id=chat_id, thread_id=thread_id, user_id=str(message.author.id),
        user_name=handle(message.author), text=text, event_id=str(message.id),
        is_private=not guild, attachments=attachments, sent_at=message.created_at.timestamp(),
        message_id=str(message.id), forwarded=bool(message.message_snapshots), reply_to=replied_to(message),
        replied=reply_context(message, me),
    )


def _shown(content: str) -> str:
    """``content`` stripped, or "" when it shows nothing (zero-width spaces, word joiners: `is_blank`): no text, so a
    file comes without it, and a message of it alone costs no turn of the model, passed over as an empty one."""
    return "" if is_blank(content) else content.strip()


def named(text: str, message: discord.Message, me: discord.ClientUser) -> str:
    """``text`` (``message``'s, or the message it forwards) with each mention read by name
    (`discord_mentions.named`), as far as the message's payload and discord.py's cache of the server tell, as no
    call to Discord is made: a user the message lists among its mentions, and the bot; a role, channel or thread
    of the server. A user the message does not list (any in a forward but the bot; discord.py keeps none of a
    forward's), a role or channel of another server (in a DM, any) or deleted stays as written."""
    guild = message.guild
    users = {user.id: user_name(user.name, user.discriminator) for user in (*message.mentions, me)}

    def role(id_: int) -> str | None:
        found = guild.get_role(id_) if guild is not None else None
        return found.name if found is not None else None

    def channel(id_: int) -> str | None:
        found = guild.get_channel_or_thread(id_) if guild is not None else None
        return found.name if found is not None else None

    return discord_mentions.named(text, users.get, role, channel)


def replied_to(message: discord.Message) -> str | None:
    """The id of the message ``message`` replies to, gone since or not; None for none. A forward references the
    message it forwards, which it does not reply to."""
    reference = message.reference
    if message.type != discord.MessageType.reply or reference is None or reference.message_id is None:
        return None
    return str(reference.message_id)


def reply_context(message: discord.Message, me: discord.ClientUser) -> str | None:
    """`Inbound.replied` of ``message``: the message it replies to (`replied_to`), as `replying` writes it: its
    text, mentions read by name (`named`), the message it forwards, its files named (the model cannot see them
    here), else its stickers, poll or embeds (`content_as_text`). None for none, for one Discord did not send
    (``resolved``: deleted, or too old to be looked up) and for a reply to the bot's own message, which the model
    has in its history as the bot wrote it: Discord has no quote of a part of a message to give in its place. A
    display name (a webhook's, an account's still on a discriminator) is written as `display_name` says."""
    if replied_to(message) is None:
        return None
    resolved = message.reference.resolved if message.reference is not None else None
    if not isinstance(resolved, discord.Message) or resolved.author.id == me.id:
        return None
    held = [resolved, *resolved.message_snapshots]
    written = "\n\n".join(filter(None, (named(_shown(m.content), resolved, me) for m in held)))
    files = " ".join(_file(attachment) for m in held for attachment in m.attachments)
    said = "\n".join(filter(None, (written, files))) or content_as_text(resolved)
    who = resolved.author
    return replying(f"@{name}" if (name := handle(who)) else display_name(who.display_name), said) if said else None


def _file(attachment: discord.Attachment) -> str:
    if (attachment.content_type or "").startswith("image/"):
        return "(a picture)"
    return f"(a file: {attachment.filename})"


def in_guild(message: discord.Message) -> bool:
    """Whether ``message`` was said in a server, as its payload's ``guild_id`` says: discord.py gives one of a server
    it does not hold (never announced to it with ``GUILD_CREATE``, or forgotten) no ``guild``, only a channel that
    names the server, and read by that the message was a DM, answered unmentioned and private."""
    return message.guild is not None or getattr(message.channel, "guild_id", None) is not None


def content_as_text(message: discord.Message) -> str:
    """The stickers, poll and embeds of a message (or of the one it forwards) without text or files, as the
    model may read them: each sticker by its name (Discord names no emoji for one), a poll's question and
    answers, each embed as `embed_text` writes it. "" when it holds none of them."""
    held = [message, *message.message_snapshots]
    parts = [f"(a sticker: {sticker.name})" for m in held for sticker in m.stickers]
    if (poll := message.poll) is not None:
        answers = (f"- {answer.text or answer.emoji or ''}" for answer in poll.answers)
        parts.append("\n".join((f"📊 Poll: {poll.question}", *answers)))
    parts += filter(None, (embed_text(embed) for m in held for embed in m.embeds))
    return "\n".join(parts)


def embed_text(embed: discord.Embed) -> str:
    """An embed (a bot's or a webhook's card, a link's preview) as the model may read it: ``🔗 Embed:`` and its
    title, then its author, link, description, fields (``- name: value``) and footer, each on a line of its own.
    People send none: one reaches the bot in a message someone forwarded, a CI bot's report or a feed's post,
    whose words are all in it. "" for one with none of these (an image alone)."""
    # A bot lays fields out in columns with a blank name (a zero-width space, as Discord refuses an empty one).
    fields = [f"- {name}: {field.value}" if (name := (field.name or "").strip("\u200b ")) else f"- {field.value}"
              for field in embed.fields]
    author, footer = embed.author.name, embed.footer.text
    lines = [f"by {author}" if author else None, embed.url, embed.description, *fields, footer]
    if not (embed.title or any(lines)):
        return ""
    return "\n".join(filter(None, (f"🔗 Embed: {embed.title}" if embed.title else "🔗 Embed", *lines)))


def components_text(components: Sequence[Any]) -> str:
    """The words of a message's display components (Discord's Components V2, which a bot's message holds in place of
    content and embeds), one line each: a text display as written (Markdown), inside a container or a section as
    laid out; a thumbnail or gallery item that is no file of the message (a link's picture) as ``(a picture, which
    the bot cannot see)``, with its description. A file, and an item that is one, is among the message's attachments,
    which the model gets; buttons, menus and separators are no words. "" for none of these."""
    lines: list[str] = []
    for component in components:
        if isinstance(component, discord.TextDisplay):
            lines.append(component.content.strip())
        elif isinstance(component, discord.Container):
            lines.append(components_text(component.children))
        elif isinstance(component, discord.SectionComponent):
            lines.append(components_text([*component.children, component.accessory]))
        elif isinstance(component, discord.ThumbnailComponent):
            lines.append(_unseen(component.media, component.description))
        elif isinstance(component, discord.MediaGalleryComponent):
            lines += (_unseen(item.media, item.description) for item in component.items)
    return "\n".join(filter(None, lines))


def _unseen(media: object, description: str | None) -> str:
    if getattr(media, "attachment_id", None) is not None:
        return ""  # one of the message's files
    return f"(a picture{f': {description}' if description else ''}, which the bot cannot see)"


def _other_content(message: discord.Message) -> str:
    """What a message (or the one it forwards) without text, files, stickers, poll or readable embed or components
    holds instead, named, or "": components without words (buttons, menus), or embeds without words, which the
    model does not read, and people do not send. Such a message is no sign of a missing Message Content intent:
    Discord sends both only with it; a missing intent shows on the next message sent with text."""
    held = [message, *message.message_snapshots]
    kinds = {"embeds": any(m.embeds for m in held), "components": any(m.components for m in held)}
    return ", ".join(kind for kind, present in kinds.items() if present)


def addressed(message: discord.Message, me: int, posted_in: Container[int], text_commands: Container[str],
              thread_chat: ThreadChat = _no_thread, answers: Container[int] = ()) -> bool:
    """A guild message for the bot without a mention: a reply to it, or in a thread it owns or posted in (one
    discord.py does not hold, if ``thread_chat`` knows it: its owner unknown), or opened on one of its ``answers``
    (the ids of the bot's answers: Discord gives a thread opened on a message that message's id, and whoever opens
    one on the bot's answer talks to the bot, as in a thread the bot opened), or a text command in a channel it
    posted in."""
    resolved = message.reference.resolved if message.reference is not None else None
    if isinstance(resolved, discord.Message) and resolved.author.id == me:
        return True
    channel = message.channel
    if channel.id in answers:  # no channel but such a thread has a message's id
        return True
    if isinstance(channel, discord.Thread) and (channel.owner_id == me or channel.id in posted_in):
        return True
    if thread_chat(channel.id) is not None and channel.id in posted_in:
        return True
    # ``!stop`` with a zero-width space glued on too, as the gateway reads it (`gateway.commands.parse`).
    words = trimmed(message.content).split(maxsplit=1)
    return channel.id in posted_in and bool(words) and trimmed(words[0]).lower() in text_commands


def text_command(inbound: Inbound, text_commands: Container[str]) -> bool:
    """Whether ``inbound`` is a command typed as a message (``!stop``; ``/stop`` too, which the gateway reads
    alike): not a slash command (`Inbound.is_command`), yet its user waits for an answer as for one, so one the
    gateway fails on is answered that it could not be handled (`platforms.not_recorded.NOT_HANDLED`). Never a
    forward (`Inbound.forwarded`): someone else's ``!stop``, which the gateway reads as a message."""
    words = trimmed(inbound.text).split(maxsplit=1)
    return not inbound.forwarded and bool(words) and words[0][:1] in ("!", "/") \
        and f"!{trimmed(words[0][1:]).lower()}" in text_commands


def handle(user: discord.abc.User) -> str | None:
    """The user's username, which no one else holds; never the display name or server nickname,
    which anyone may set to anything (an allowed user's name, say). An account still on a
    ``name#1234`` discriminator, or a webhook's ``#0000``, shares its name with others: None."""
    return user.name if user.discriminator == "0" else None


def chat_of(channel: Any, channel_id: int | None, thread_chat: ThreadChat = _no_thread) -> tuple[str, str | None]:
    """(chat_id, thread_id): a thread is a session inside its parent channel. A thread discord.py does not hold (its
    message's channel a PartialMessageable, which names no parent: nor does Discord's message) by ``thread_chat``,
    so that its messages stay in the thread's one conversation; one it does not know either is keyed as a channel
    here, and the adapter asks Discord for the thread before handing the message over
    (`platforms.discord.DiscordAdapter`)."""
    if isinstance(channel, discord.Thread) and channel.parent_id is not None:
        return str(channel.parent_id), str(channel.id)
    if channel_id is not None and (chat := thread_chat(channel_id)) is not None:
        return chat, str(channel_id)
    return str(channel_id), None
