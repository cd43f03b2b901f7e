"""Slash commands on Discord: registered at start, and the `Inbound` each use becomes.

Each `CommandSpec` becomes a slash command with one optional ``args`` string,
registered by bulk overwrite in every guild of ``command_guilds`` (instant; the global
ones an earlier start left are removed) or globally when that is empty. An interaction is
deferred (type 5, "thinking…") before it is handed over, so Discord's 3-second window holds whatever the
gateway does (one refused as already acknowledged, 40060, was taken by discord.py's earlier try, which
Discord answered with a 5xx: it is deferred all the same; one refused is handed over with a token nothing can be
sent through (`discord_interactions.Interactions.unacknowledged`), to be answered in the channel, but for an answer
to its user alone (a stranger's refusal), which is not sent at all; one given up on before Discord answered it,
past `ACKNOWLEDGE_TIMEOUT` or at a stop, keeps it: Discord may have taken it, and is asked at the first answer);
its ``reply_token`` is ``"<application id>:<interaction token>"`` (valid 15 minutes). Answering it stays with the
adapter's sending (`platforms.discord`), but for one a stop left unrecorded: Discord never sends it again, so its user
alone is told to send it again (`tell_not_taken`); one whose hand-over the stop cut off may be recorded, and
is answered that it may come after the restart (`Handing`); one the gateway failed on (a bug, dropped) is answered,
to its user alone, that it could not be handled (`tell_not_handled`). The deferral, made before the gateway
reads who sent the command, is seen by the channel: a word for the user alone deletes it first
(`discord_interactions.delete_thinking`).

Apart from the adapter because commands come outside the channels' messages: no mention, no
catch-up, their own acknowledgement. Logged under ``platforms.discord``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import aiohttp

from platforms.base import (
    BadRequest,
    CommandSpec,
    DeliveryError,
    Forbidden,
    Inbound,
    NetworkError,
    Outbound,
    RateLimited,
    Sent,
)
from platforms.discord_errors import delivery_error, translate
from platforms.discord_inbound import chat_of, handle
from platforms.discord_interactions import application_webhook, delete_thinking, settled
from platforms.discord_mentions import in_command
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.not_recorded import MAY_BE_TAKEN, NOT_HANDLED, NOT_TAKEN

log = logging.getLogger("platforms.discord")

CALLBACK = "POST /interactions/{id}/{token}/callback"
ACKNOWLEDGED = 40060
"""Discord's "Interaction has already been acknowledged": a response to the interaction was taken before."""
ACKNOWLEDGE_TIMEOUT = 5.0
"""Seconds a command's "thinking…" call is given before the command goes on without it, as if refused. Discord
takes a first response within 3 seconds of the interaction only, so a later answer brings nothing but "Unknown
interaction"; unbounded, the call waited for aiohttp's own limit, 5 minutes, before the command was handed over."""

OnCommand = Callable[[discord.Interaction, str, "str | None"], Awaitable[None]]
"""The adapter's handler of one command: ``(interaction, command name, args)``."""



def command_tree(client: discord.Client, commands: Sequence[CommandSpec], guild_ids: Sequence[int],
                 on_command: OnCommand) -> discord.app_commands.CommandTree:
    """A slash command per `CommandSpec`, in every guild of ``guild_ids`` (global when empty)."""
    tree = discord.app_commands.CommandTree(client)
    guilds = [discord.Object(id=g) for g in guild_ids]
    for spec in commands:
        try:
            tree.add_command(slash_command(spec, on_command), guilds=guilds)
        except (ValueError, TypeError, discord.app_commands.AppCommandError) as exc:
            log.error("discord: cannot register /%s: %s", spec.name, exc)
    return tree


def slash_command(spec: CommandSpec, on_command: OnCommand) -> discord.app_commands.Command[Any, ..., None]:
    async def callback(interaction: discord.Interaction, args: str | None = None) -> None:
        await on_command(interaction, spec.name, args)

    callback = discord.app_commands.describe(args="Optional arguments")(callback)
    return discord.app_commands.Command(name=spec.name, description=(spec.description or spec.name)[:100],
                                        callback=callback)


async def sync(tree: discord.app_commands.CommandTree, guild_ids: Sequence[int]) -> None:
    """Register the tree's commands by bulk overwrite; a failure is logged, not raised. Per guild, the global
    commands an earlier global registration left are removed (`_empty_global_scope`)."""
    scopes = [discord.Object(id=g) for g in guild_ids] or [None]
    for guild in scopes:
        scope = "commands" if guild is None else "guilds/{guild_id}/commands"
        route = "PUT /applications/{application_id}/" + scope
        try:
            await tree.sync(guild=guild)
        except Exception as exc:  # commands are a convenience: `!stop` text still works
            # Not `translate`, whose line (a refusal's, an outage's) said the same failure again before this one.
            error = delivery_error(exc, route=route, chat_id=str(guild.id) if guild else "global")
            where = f"in guild {guild.id}" if guild else "globally"
            log.error("discord: slash commands not registered %s (%s); %s", where, error,
                      _unregistered_hint(exc, error, [c.name for c in tree.get_commands(guild=guild)], guild))
    if guild_ids:
        await _empty_global_scope(tree)


UNKNOWN_GUILD = 10004
"""Discord's "Unknown Guild": a guild of ``command_guilds`` the bot is not in (or a mistyped id)."""
_REFUSED_AT = re.compile(r"^In (\d+)\.", re.MULTILINE)
"""Where a 400's ``errors`` name a refused command: by its index in the list registered (``In 1.description:``)."""


def _unregistered_hint(exc: BaseException, error: DeliveryError, names: Sequence[str],
                       guild: discord.Object | None) -> str:
    """What to do about a registration that failed (``exc``, translated: ``error``), by its kind: only a 403
    says the bot lacks the applications.commands scope; a 404 Unknown Guild, that the bot is not in ``guild``; a
    rate limit or a network error passes by itself; a 400 is about the commands ``names`` (in the order
    registered), naming those the error points at."""
    if guild is not None and isinstance(exc, discord.HTTPException) and exc.code == UNKNOWN_GUILD:
        return (f"the bot is not in guild {guild.id} (platforms.discord.command_guilds): invite it there, or remove"
                " the id; the text commands (such as !stop) still work")
    if isinstance(error, Forbidden):
        if guild is not None:  # Discord answers so for a guild the bot is not in, too
            return (f"invite the bot to guild {guild.id} with the applications.commands scope, or remove the id from"
                    " platforms.discord.command_guilds")
        return "invite the bot with the applications.commands scope"
    if isinstance(error, RateLimited | NetworkError):
        return "they are registered again at the next start; the text commands (such as !stop) work meanwhile"
    if isinstance(error, BadRequest):
        at = sorted({int(i) for i in _REFUSED_AT.findall(str(error)) if int(i) < len(names)})
        refused = ", ".join(f"/{names[i]}" for i in at) or "a command"
        return f"Discord refused the definition of {refused}; the text commands (such as !stop) still work"
    return "the text commands (such as !stop) still work"


async def _empty_global_scope(tree: discord.app_commands.CommandTree) -> None:
    """Remove the global commands an earlier global registration left: they showed in every server and DM,
    and each use failed ("did not respond"), as the tree, per guild, serves none. Asked first, so a start
    changes nothing when there are none."""
    route = "GET /applications/{application_id}/commands"
    try:
        if await tree.fetch_commands():
            route = "PUT /applications/{application_id}/commands"
            await tree.sync()  # the tree holds no global command: none are left
            log.info("discord: removed the global slash commands an earlier registration left")
    except Exception as exc:
        error = delivery_error(exc, route=route, chat_id="global")  # logged once, below (as in `sync`)
        log.warning("discord: could not remove the global slash commands an earlier registration may have left"
                    " (%s); any left show everywhere but do not answer", error)


async def received(interaction: discord.Interaction, name: str, args: str | None, *,
                   deferred: Callable[[str], None], unsure: Callable[[str, float], None],
                   unacknowledged: Callable[[str], None], stopping: asyncio.Event,
                   timeout: float = ACKNOWLEDGE_TIMEOUT) -> Inbound:
    """The command as the gateway takes it, once deferred (``deferred`` is told its reply token); one
    that Discord refused to defer keeps its reply token, ``unacknowledged`` told it: its answers go to the
    channel, but one for its user alone (`DiscordAdapter.refused`), which is not sent. Without a token, a
    stranger's refusal was posted in the channel, naming them to everyone there. One whose
    deferral Discord had not answered within ``timeout`` seconds, or when the adapter began to stop
    (``stopping``: the stop does not wait for it), or that failed on the way (a reset, a 5xx), keeps its
    reply token, and ``unsure`` is told it with the loop time the command came at: the request may have
    reached Discord, which then shows "thinking…" until the answer replaces it; counted as refused, the
    answer went to the channel and "thinking…" stayed beside it for 15 minutes (`Interactions.unsure`:
    Discord is asked at the first answer). Dated by Discord
    (its interaction's id), as a message is: the deferral's round trip may hand it over after a message sent
    later, which the gateway, told which came first, does not stop or drop for it (`gateway.commands`). Its text
    reads mentions by name, as a message's does (`discord_mentions.in_command`)."""
    reply_token = f"{interaction.application_id}:{interaction.token}"
    came = asyncio.get_running_loop().time()
    try:
        await _unless_stopping(interaction.response.defer(thinking=True), stopping, timeout)
        deferred(reply_token)
    except Exception as exc:  # too late, or rate limited: run it, answer in the channel
        if isinstance(exc, discord.HTTPException) and exc.code == ACKNOWLEDGED:
            # discord.py sent it again after a 5xx, and Discord had taken the first: "thinking…" shows, to
            # be replaced by the answer (in the channel, the interaction showed "thinking…" until it failed).
            # Not a repeat Discord delivered (a RESUME's replay): the adapter drops one by its id before this
            # (`DiscordAdapter._on_command`); one older than the ids it keeps, the gateway's inbox drops.
            log.info("discord: /%s from user %s was acknowledged already (an earlier try, or a delivery"
                     " before this one)", name, interaction.user.id)
            deferred(reply_token)
        elif isinstance(exc, (discord.RateLimited, discord.HTTPException)) \
                and not isinstance(exc, discord.DiscordServerError):
            error = translate(exc, route=CALLBACK, chat_id=str(interaction.channel_id), caller_logs=True)
            log.warning("discord: could not acknowledge /%s from user %s (%s); answering in the channel instead",
                        name, interaction.user.id, type(error).__name__)
            unacknowledged(reply_token)
        else:  # given up on, or failed on the way: Discord may have taken it
            error = translate(exc, route=CALLBACK, chat_id=str(interaction.channel_id), caller_logs=True)
            log.warning("discord: could not acknowledge /%s from user %s (%s); Discord may have taken it: the answer"
                        " replaces its \"thinking…\" if it did, else goes to the channel", name, interaction.user.id,
                        type(error).__name__)
            unsure(reply_token, came)
    chat_id, thread_id = chat_of(interaction.channel, interaction.channel_id)
    return Inbound(
        platform="discord", chat_id=chat_id, thread_id=thread_id, user_id=str(interaction.user.id),
        user_name=handle(interaction.user), text=f"/{name} {in_command(args or '', interaction)}".strip(),
        event_id=str(interaction.id), is_command=True, is_private=interaction.guild_id is None,
        reply_token=reply_token, sent_at=interaction.created_at.timestamp(),
    )


async def _unless_stopping(call: Awaitable[object], stopping: asyncio.Event, timeout: float) -> None:
    """Await ``call`` for up to ``timeout`` seconds; past them, or once ``stopping`` is set, give it up and
    raise `NetworkError`: a stop leaves the client open for the replies still to send, so closing it no
    longer ends a call Discord does not answer."""
    task = asyncio.ensure_future(call)
    stop = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait({task, stop}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not task.done():  # cut short: a stop, the timeout, or this command's own cancellation
            task.cancel()
            await asyncio.wait({task})
    if task.cancelled():
        why = "the adapter stopped before Discord answered" if stopping.is_set() else \
            f"Discord did not answer within {timeout:g}s"
        raise NetworkError(why, method=CALLBACK, platform="discord")
    task.result()


async def tell_not_taken(commands: Sequence[Inbound], session: aiohttp.ClientSession | None,
                         seconds: float, settling: Callable[[str], float] = lambda _token: 0.0,
                         cut_off: Sequence[Inbound] = (),
                         replied: Callable[[str], bool] = lambda _token: False,
                         acknowledged: Callable[[str], bool] = lambda _token: True) -> None:
    """Answer each command a stop left unrecorded, in place of its "thinking…", that it was not
    taken: Discord sends an interaction once, so the user is the one who can send it again; and each of
    ``cut_off`` (its hand-over cut off midway: `Handing`) that it may be answered after the restart. All
    within ``seconds`` (the stop's grace is the gateway's to share): an answer Discord has not
    taken by then is given up, and Discord shows the user that the interaction failed. ``settling``: seconds
    before a command's "not acknowledged" is final (`discord_interactions.Interactions.settling`); ``replied``:
    whether the gateway answered a command through its interaction (`Interactions.replied`): one cut off after
    it was answered keeps that answer (`may_be_taken`); ``acknowledged``: whether Discord took a command's
    acknowledgement (`Interactions.acknowledged`): one it refused has nothing to be answered through, as one without
    a token."""
    if not commands and not cut_off:
        return
    commands = [_usable(command, acknowledged) for command in commands]
    cut_off = [_usable(command, acknowledged) for command in cut_off]
    tasks = [asyncio.ensure_future(not_taken(command, session, settling)) for command in commands]
    tasks += [asyncio.ensure_future(may_be_taken(command, session, settling, replied)) for command in cut_off]
    await asyncio.wait(tasks, timeout=seconds)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _usable(command: Inbound, acknowledged: Callable[[str], bool]) -> Inbound:
    """``command``, without its reply token if Discord refused its acknowledgement: told nothing through it."""
    token = command.reply_token
    return command if token is None or acknowledged(token) else dataclasses.replace(command, reply_token=None)


async def not_taken(command: Inbound, session: aiohttp.ClientSession | None,
                    settling: Callable[[str], float] = lambda _token: 0.0) -> None:
    """Tell the user alone a command the gateway stopped before recording was not taken: its "thinking…",
    which the channel sees, is deleted, and the word goes as an ephemeral follow-up (the deferral's token lives
    15 minutes; `discord_interactions.delete_thinking`). Without a token (Discord refused its acknowledgement,
    and told the user it did not respond) or a session, it is logged only; never raises. One whose
    acknowledgement was given up on (`received`) is refused as not found while Discord did not take it: tried
    once more when Discord's window for it is over (``settling``), as one still on its way may be taken yet."""
    name = command.text.split(maxsplit=1)[0]
    log.warning("discord: %s from user %s (interaction %s) was not recorded before the gateway stopped;"
                " telling the user to send it again", name, command.user_id, command.event_id)
    await _tell(command, NOT_TAKEN.format(command=name), session, settling, private=True)


async def may_be_taken(command: Inbound, session: aiohttp.ClientSession | None,
                       settling: Callable[[str], float] = lambda _token: 0.0,
                       replied: Callable[[str], bool] = lambda _token: False) -> None:
    """Tell the user a command whose hand-over the stop cut off (`Handing`) that it may be answered after the
    restart (`MAY_BE_TAKEN`), in place of its "thinking…", in view of the channel as the answer that may follow
    is (deleted, "thinking…" would leave that answer nothing to follow: it would go to the channel as a message of
    its own); never raises. Not one the gateway answered already (``replied``): the sink records, then routes,
    and a stop may cut it off after the routing answered (`/stop` or `/new`, say); the edit of "@original" then
    replaced the real answer (posted in place of "thinking…", or on its way there) with a word that an answer
    may come."""
    name = command.text.split(maxsplit=1)[0]
    if command.reply_token is not None and replied(command.reply_token):
        log.info("discord: %s from user %s (interaction %s) was still being handed over when the gateway stopped,"
                 " and was answered already: its answer is left as it is", name, command.user_id, command.event_id)
        return
    log.warning("discord: %s from user %s (interaction %s) was still being handed over when the gateway stopped;"
                " it is answered after the restart if the gateway recorded it: telling the user so", name,
                command.user_id, command.event_id)
    await _tell(command, MAY_BE_TAKEN.format(command=name), session, settling)


async def tell_not_handled(command: Inbound, answer: Callable[[Outbound], Awaitable[Sent]]) -> None:
    """Tell the user the gateway failed on ``command`` (a bug it trips, not a full disk: dropped,
    `discord_handover.until_recorded`) that it could not be handled (`NOT_HANDLED`), through ``answer`` (the
    adapter's, which keeps a slash command's to its user: `discord_interactions.Interactions.private`): in place
    of its "thinking…", or below the gateway's own answer if the routing answered before it failed (the edit of
    "@original" would replace that answer), or in the channel if Discord refused its acknowledgement;
    with its token gone it is not told (an answer for its user alone is never posted in the channel instead).
    Nothing else answers it, and Discord shows "thinking…" until the
    token expires, then that the interaction failed. Never raises: a failure is logged."""
    name = command.text.split(maxsplit=1)[0]
    log.warning("discord: %s from user %s (interaction %s) was dropped, the gateway failing on it; telling the user",
                name, command.user_id, command.event_id)
    try:
        await answer(Outbound(chat_id=command.chat_id, thread_id=command.thread_id,
                              text=NOT_HANDLED.format(command=name), kind="command", reply_token=command.reply_token,
                              idempotency_key=f"not-handled:{command.event_id}"))
    except Exception as exc:
        log.warning("discord: could not tell user %s what became of %s (%s)", command.user_id, name,
                    type(exc).__name__)


async def _tell(command: Inbound, text: str, session: aiohttp.ClientSession | None,
                settling: Callable[[str], float], *, private: bool = False) -> None:
    """``text`` in place of the command's "thinking…", or, ``private``, to its user alone after deleting it."""
    name = command.text.split(maxsplit=1)[0]
    if command.reply_token is None or session is None:
        return
    mentions = discord.AllowedMentions.none()
    base = "/webhooks/{application_id}/{token}"
    route = f"DELETE {base}/messages/@original" if private else f"PATCH {base}/messages/@original"
    try:
        webhook = application_webhook(command.reply_token, session)
        if private:
            await delete_thinking(webhook, settling(command.reply_token))
            route = f"POST {base}"
            await webhook.send(text, wait=True, ephemeral=True, allowed_mentions=mentions)
        else:
            await settled(lambda: webhook.edit_message(
                "@original", content=text, allowed_mentions=mentions),  # type: ignore[arg-type]
                settling(command.reply_token))
    except Exception as exc:
        error = translate(exc, route=route, chat_id=command.chat_id, caller_logs=True)
        log.warning("discord: could not tell user %s what became of %s (%s)", command.user_id, name,
                    type(error).__name__)
