"""Answers to slash commands through their interaction, and edits and deletions of those answers.

The first answer replaces the deferred response's "thinking…", later ones are follow-ups; after a
restart Discord is asked which comes next, as it is for a command whose acknowledgement the adapter gave up
on before Discord answered it (`unsure`). An answer meant for the command's user alone (`private`: the
gateway refused them, or the command did not run) cannot replace "thinking…": Discord fixed who sees that at
the deferral, made in view of the channel before the gateway read who sent the command, and a follow-up while
"thinking…" shows is taken as its answer, whatever its own flags. So "thinking…" is deleted first, and the
answer goes as an ephemeral follow-up (`delete_thinking`). Which answers are private is journaled with them
(`platforms.base.Outbound.private`), and each part goes as journaled, in this process and after a restart: one
sent privately also when the process that deleted its "thinking…" died before the follow-up; a part journaled for
all before the interaction's answers became private (the gateway answered, then failed on the command) is still
for all, not kept to the user in this process and posted in the channel after a restart. A command whose
acknowledgement Discord refused keeps its token, known as `unacknowledged`: its answers cannot go through the
interaction, so they go to the channel, but for one for its user alone (a stranger's refusal), which goes nowhere.
Apart from the adapter (`platforms.discord`) because
it is one concept, the interaction's side of sending; its rate-limit waits are `platforms.discord_answers`'.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TypeVar

import aiohttp

from platforms.base import NotFound, Outbound, OutboundFile, Sent
from platforms.discord_answers import INTERACTION_WINDOW, open_session
from platforms.discord_calls import CALL_TIMEOUT, SLOWEST_UPLOAD
from platforms.discord_errors import answered, made_all_the_same, translate
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.formatting import blank, discord_markdown
from platforms.recent import remember

# What the bot posts is the model's text, which may copy mentions from what users wrote or a page it
# read: it never pings anyone (a mention still shows as one). The bot does not post replies, so
# there is no asker to ping either.
MENTIONS = discord.AllowedMentions.none()
T = TypeVar("T")
_REMEMBERED = 1000  # interaction tokens and webhook message ids kept for answers and edits
UNKNOWN_MESSAGE = 10008
"""Discord's "Unknown Message": here, a deferred response deleted already (by an earlier try of the answer)."""
UNACKNOWLEDGED = "Discord refused the command's acknowledgement"


class Interactions:
    def __init__(self, client: Callable[[], discord.Client], *, window: float = INTERACTION_WINDOW) -> None:
        """``client``: the adapter's connected client (raising while there is none). ``window``: seconds after
        an interaction came by which Discord has surely taken or refused its acknowledgement (`unsure`)."""
        self._client = client
        self._window = window
        self._unsure: OrderedDict[str, float] = OrderedDict()
        """Reply tokens whose acknowledgement was given up on before Discord answered it -> the loop time
        from which Discord's "not acknowledged" is final (`unsure`)."""
        self.session: aiohttp.ClientSession | None = None
        """The webhooks' session (`platforms.discord_answers.open_session`), opened with the client."""
        self._answered: OrderedDict[str, int | None] = OrderedDict()
        """Interaction reply tokens: the id of their first answer, None while they show "thinking…" (or nothing:
        deleted for a private answer not sent yet). Set at the defer, or as Discord says after a restart."""
        self._replying: OrderedDict[str, None] = OrderedDict()
        """Interaction reply tokens this process began to answer through (`answer`), sent or not (`replied`)."""
        self._private: OrderedDict[str, None] = OrderedDict()
        """Interaction reply tokens whose answers are for the command's user alone (`private`)."""
        self._unacknowledged: OrderedDict[str, None] = OrderedDict()
        """Interaction reply tokens Discord refused the acknowledgement of (`unacknowledged`)."""
        self._webhook_messages: OrderedDict[str, str] = OrderedDict()
        self._parts: OrderedDict[str, str | None] = OrderedDict()
        """Follow-ups this process posted or found (`claim`), by id: the idempotency key of the part each was
        posted for."""
        self._first_words: OrderedDict[str, str] = OrderedDict()
        """Reply tokens whose first answer an earlier process posted -> its content, as Discord showed it
        when asked: the part it was posted for is not known (`claim_first`)."""

    def deferred(self, reply_token: str) -> None:
        """The interaction's response was deferred: it shows "thinking…" until its first answer. One told so
        again keeps what is known of it: reset, its answer's next part replaced the first part, posted already,
        in place of "thinking…" (a repeat the adapter no longer knew, `DiscordAdapter._on_command`)."""
        if reply_token not in self._answered:
            remember(self._answered, reply_token, None, _REMEMBERED)

    def unsure(self, reply_token: str, since: float) -> None:
        """The interaction (come at loop time ``since``) was acknowledged, but the call was given up on before
        Discord answered it (a stop, or no answer in time): the request may have reached Discord, which then
        shows "thinking…". Which it is, only Discord knows: asked, as after a restart, at its first answer
        (or its "not taken"). Until Discord's window for the acknowledgement is over, a request still on its
        way may be taken yet, so "not acknowledged" is asked once more then (`settling`)."""
        remember(self._unsure, reply_token, since + self._window, _REMEMBERED)

    def unacknowledged(self, reply_token: str) -> None:
        """Discord refused the interaction's acknowledgement (rate limited past its window, too late): it never
        showed "thinking…", and nothing can be sent through it. Its answers raise `NotFound` at once (`answer`),
        as they would from Discord, which after a restart is asked."""
        remember(self._unacknowledged, reply_token, None, _REMEMBERED)

    def acknowledged(self, reply_token: str) -> bool:
        """Whether answers may go through the interaction: not one whose acknowledgement Discord refused."""
        return reply_token not in self._unacknowledged

    def private(self, reply_token: str) -> None:
        """The answers the gateway journals through the interaction from now on are for its user alone
        (ephemeral): a refusal, a word that the command did not run. Kept in memory; the outbox journals it with
        each such answer (`Outbound.private`, asked of `DiscordAdapter.answers_privately`), and `answer` sends
        each part as journaled, in this process and after a restart alike."""
        remember(self._private, reply_token, None, _REMEMBERED)

    def is_private(self, reply_token: str) -> bool:
        """Whether the interaction's answers are ephemeral: none is found in the channel's history."""
        return reply_token in self._private

    def settling(self, reply_token: str) -> float:
        """Seconds before Discord's "not acknowledged" is final for ``reply_token`` (0: it is already)."""
        until = self._unsure.get(reply_token)
        return 0.0 if until is None else max(until - asyncio.get_running_loop().time(), 0.0)

    def unanswered(self, reply_token: str) -> bool:
        """Whether this process knows the interaction still shows "thinking…" (its next part replaces it)."""
        return reply_token in self._answered and self._answered[reply_token] is None

    async def first_answer(self, reply_token: str) -> int | None:
        """The id of the interaction's first answer, None while it shows "thinking…" (Discord is asked
        when this process does not know). Raises discord.py's errors (`discord.NotFound`: the token is gone), and
        `NotFound` for one whose acknowledgement Discord refused."""
        self._usable(reply_token)
        await self._unanswered(self.webhook(reply_token), reply_token)
        return self._answered[reply_token]

    def replied(self, reply_token: str) -> bool:
        """Whether the gateway answered the interaction: this process began an answer through it (`answer`; one
        still on its way, or refused, comes again from the outbox), or its first answer is known. A stop's own
        word in place of "thinking…" (`discord_commands.may_be_taken`) would replace that answer."""
        return reply_token in self._replying or self._answered.get(reply_token) is not None

    def posted_for(self, message_id: int) -> str | None:
        """The idempotency key of the part this process posted as follow-up ``message_id``, if it did."""
        return self._parts.get(str(message_id))

    def claim(self, message_id: int, idempotency_key: str | None) -> None:
        """Follow-up ``message_id``, which an earlier attempt posted, was found for this part: no other part
        in the same words may be taken for it."""
        remember(self._parts, str(message_id), idempotency_key, _REMEMBERED)

    def claim_first(self, reply_token: str, content: str) -> bool:
        """Whether the interaction's first answer, posted by an earlier process for a part it did not say,
        has ``content`` (stripped, as Discord stores it): it is then taken as that part's, once."""
        words = self._first_words.get(reply_token)
        if words is None or words.strip() != content:
            return False
        del self._first_words[reply_token]
        return True

    def token_of(self, message_id: str) -> str | None:
        """The reply token of the interaction that posted ``message_id``, if it was an answer."""
        return self._webhook_messages.get(message_id)

    async def answer(self, message: Outbound, file: OutboundFile | None = None) -> Sent:
        """Send ``message`` through its interaction, for its user alone if it is ``private``; with ``file``, that
        file attached, ``message.text`` its caption, as a follow-up (a private one's is ephemeral, as its parts
        are: `DiscordAdapter.send_file`). Raises `NotFound` for an interaction Discord did not acknowledge
        (`unacknowledged`), and what the calls raise, translated."""
        assert message.reply_token is not None
        self._usable(message.reply_token, message.chat_id)
        route = "GET /webhooks/{application_id}/{token}/messages/@original"
        content = discord_markdown.render(message.text if file is None else blank.caption(message.text))
        remember(self._replying, message.reply_token, None, _REMEMBERED)  # before the call: a stop may come during it
        # As journaled, not as the interaction now is: a part journaled for all before the command's "could not
        # handle" made the interaction private stays for all, here as after a restart, which has only the journal.
        private = message.private
        if private:  # the answers journaled later are private too (`answers_privately`), also after a restart
            self.private(message.reply_token)
        sending = False  # the answer's own call, not the lookup before it, whose answer names another message
        with answered() as answer:  # a 2xx discord.py cannot read (`discord_errors.answered`)
            try:
                webhook = self.webhook(message.reply_token)
                first = await self._unanswered(webhook, message.reply_token, private=private)
                base = "/webhooks/{application_id}/{token}"
                if first and private:  # what replaces "thinking…" is seen by all: it goes first
                    route = f"DELETE {base}/messages/@original"
                    await delete_thinking(webhook)
                edits = first and not private and file is None
                route = f"PATCH {base}/messages/@original" if edits else f"POST {base}"
                sending = True
                if edits:  # replace the "thinking…" placeholder of the deferred response
                    sent = (await webhook.edit_message("@original", content=content,  # type: ignore[arg-type]
                                                       allowed_mentions=MENTIONS)).id
                else:
                    sent = await _follow_up(webhook, content, message.silent, private, file)
            except Exception as exc:
                made = made_all_the_same(exc, answer, route=route, chat_id=message.chat_id) if sending else None
                if made is None:
                    raise translate(exc, route=route, chat_id=message.chat_id, caller_logs=True, answer=answer) from exc
                sent = made
        if first:  # a private one's ephemeral follow-up in its place: what a later part follows
            remember(self._answered, message.reply_token, sent, _REMEMBERED)
        else:  # the first answer's part is settled: a part later than it is never that answer
            remember(self._parts, str(sent), message.idempotency_key, _REMEMBERED)
            self._first_words.pop(message.reply_token, None)
        remember(self._webhook_messages, str(sent), message.reply_token, _REMEMBERED)
        return Sent(str(sent))

    def _usable(self, reply_token: str, chat_id: str | None = None) -> None:
        if reply_token in self._unacknowledged:
            raise NotFound(UNACKNOWLEDGED, method="POST /webhooks/{application_id}/{token}", chat_id=chat_id,
                           platform="discord")

    async def _unanswered(self, webhook: discord.Webhook, reply_token: str, *, private: bool = False) -> bool:
        """Whether the interaction still shows "thinking…". Deferred by an earlier process (the
        gateway restarted between the parts of an answer), only Discord knows: asked once. ``private``: an
        answer for the user alone, for which a deferred response deleted already counts as unanswered (an
        earlier process deleted it, and died before the follow-up: its token is not gone)."""
        if reply_token not in self._answered:
            try:
                original = await settled(lambda: webhook.fetch_message("@original"),  # type: ignore[arg-type]
                                         self.settling(reply_token))
            except discord.NotFound as exc:
                if not private or exc.code != UNKNOWN_MESSAGE:
                    raise
                self._unsure.pop(reply_token, None)
                remember(self._answered, reply_token, None, _REMEMBERED)
                return True
            self._unsure.pop(reply_token, None)
            remember(self._answered, reply_token, None if original.flags.loading else original.id, _REMEMBERED)
            if not original.flags.loading:  # perhaps the answer to the very part the outbox looks for
                remember(self._first_words, reply_token, original.content, _REMEMBERED)
        return self._answered[reply_token] is None

    def webhook(self, reply_token: str) -> discord.Webhook:
        client = self._client()
        assert self.session is not None  # opened with the client
        return application_webhook(reply_token, self.session, client)


async def _follow_up(webhook: discord.Webhook, content: str, silent: bool, private: bool,
                     file: OutboundFile | None) -> int:
    """Post a follow-up (ephemeral if ``private``), with ``file`` attached if given: opened in a worker thread,
    closed once the call is over, and given its bytes' time on a session of its own."""
    if file is None:
        return (await webhook.send(content, wait=True, silent=silent, ephemeral=private,
                                   allowed_mentions=MENTIONS)).id
    # The answers' session gives a call its bound whole; an upload has a second more for every SLOWEST_UPLOAD bytes,
    # as a channel's has (`discord_calls.bound`): a 10 MiB answer.md on a slow line was cut off at 30 s every try.
    webhook.session = open_session((webhook.session.timeout.total or CALL_TIMEOUT) + file.size / SLOWEST_UPLOAD)
    try:
        upload = await asyncio.to_thread(discord.File, file.path, filename=file.name)
        try:
            return (await webhook.send(content or discord.utils.MISSING, wait=True, silent=silent,
                                       ephemeral=private, file=upload, allowed_mentions=MENTIONS)).id
        finally:
            upload.close()
    finally:
        await webhook.session.close()


def application_webhook(reply_token: str, session: aiohttp.ClientSession,
                        client: discord.Client | None = None) -> discord.Webhook:
    """The interaction's webhook, as discord.py's ``Interaction.followup`` builds it: of the application's
    type (3), the only one discord.py sends an ephemeral message through (``Webhook.partial`` makes an
    incoming one, type 1, which raises ValueError for ``ephemeral=True``)."""
    app_id, token = reply_token.split(":", 1)
    state = {} if client is None else {"client": client}
    webhook = discord.Webhook.partial(int(app_id), token, session=session, **state)
    webhook.type = discord.WebhookType.application
    return webhook


async def delete_thinking(webhook: discord.Webhook, settling: float = 0.0) -> None:
    """Delete the interaction's deferred response, so that a follow-up after it may be ephemeral: while
    "thinking…" shows, a follow-up replaces it, seen by the whole channel. One deleted already (an earlier try
    of the answer) is gone, as wanted. ``settling``: as for `settled`."""
    try:
        await settled(lambda: webhook.delete_message("@original"), settling)  # type: ignore[arg-type]
    except discord.NotFound as exc:
        if exc.code != UNKNOWN_MESSAGE:
            raise


async def settled(call: Callable[[], Awaitable[T]], settling: float) -> T:
    """``call()``; refused as not found (the interaction not acknowledged) while an acknowledgement may still
    be on its way to Discord, ``call()`` again once ``settling`` seconds are over (`Interactions.unsure`).
    A second refusal is raised: Discord did not take it, and shows the user that the interaction failed."""
    try:
        return await call()
    except discord.NotFound:
        if not settling:
            raise
    await asyncio.sleep(settling)
    return await call()
