"""Slack's slash commands: the `Inbound` a command's payload becomes, and its ephemeral answer.

Apart from the adapter (`platforms.slack`) because a command comes and is answered outside the
conversation: acked empty (once the gateway has recorded it, as an event), answered through the
payload's ``response_url`` (valid 30 minutes, 5 uses; works where the bot is not a channel member),
else with ``chat.postEphemeral``. The answer's message id starts with `EPHEMERAL`: such a message
cannot be edited or deleted, nor looked up (no history holds it), so an answer whose fate is unknown
is sent again without asking. One a stop leaves unrecorded, which Slack never sends again and no
history keeps, is answered to be sent again (`tell_not_taken`); one whose hand-over the stop cut off
may be recorded, and is answered that it may come after the restart (`Handing`), unless the gateway
answered it already. One the gateway failed on before it recorded it is answered so (`NOT_HANDLED`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import aiohttp
from slack_sdk.webhook.async_client import AsyncWebhookClient

from platforms.base import BadRequest, Inbound, NetworkError, Outbound, RateLimited, Sent, scalar_text
from platforms.formatting import slack_mrkdwn
from platforms.not_recorded import MAY_BE_TAKEN, NOT_HANDLED, NOT_TAKEN
from platforms.proxies import proxy_for
from platforms.slack_errors import translate, translate_exception
from platforms.slack_message_limit import MessageLimit
from platforms.slack_text import readable

log = logging.getLogger("platforms.slack")

EPHEMERAL = "ephemeral:"


def inbound_of(platform: str, body: dict[str, Any]) -> Inbound:
    """The command as the gateway takes it; its ``reply_token`` is what `answer` needs."""
    channel, user = body["channel_id"], body["user_id"]
    token = json.dumps({"response_url": body.get("response_url"), "channel": channel, "user": user})
    return Inbound(
        # Not the payload's user_name: Slack says not to rely on it (no longer unique, being phased
        # out); access goes by the user id, as it does for messages.
        platform=platform, chat_id=channel, thread_id=None, user_id=user, user_name=None,
        text=f"{body['command']} {readable(body.get('text') or '')}".strip(),  # escaped as a message's is
        event_id=_event_id(body), is_command=True, is_private=channel.startswith("D"), reply_token=token,
    )


def _event_id(body: dict[str, Any]) -> str:
    """``command:<trigger_id>``; without one, named by a digest of its ``response_url``, which names it as well: the
    URL itself is a credential (whoever holds it may post in the channel for 30 minutes), and the id shows in the
    log and the console. Without either, an id of its own: one shared would make every later command a repeat."""
    if trigger := body.get("trigger_id"):
        return f"command:{trigger}"
    if url := body.get("response_url"):
        return f"command:url-{hashlib.sha256(str(url).encode()).hexdigest()[:32]}"
    return f"command:{uuid.uuid4().hex}"


async def answer(message: Outbound, session: aiohttp.ClientSession | None,
                 formatted: Callable[..., Awaitable[Any]], limit: MessageLimit, *, once: bool = False) -> Sent:
    """Answer through the command's ``response_url`` while Slack takes it, else with ``chat.postEphemeral``
    through ``formatted`` (the adapter's call with the Markdown rendered); either, as a post, only while the
    workspace's message ``limit`` lets posts go (but ``once``: a word nothing sends again, `tell`), and one that
    meets it holds every channel's posts.

    Only a URL Slack refuses (a 4xx: expired, used up) falls back. A 5xx or no answer at all raises
    `NetworkError`: Slack may have shown the answer all the same, and posting it at once the other way
    would then show it twice. The outbox tries the URL again later, as it retries any part it cannot
    look up (`platforms.base.FindsSent`): a 5xx whose answer Slack did show is shown twice then, which
    beats an answer lost when it did not. Any 2xx is an answer shown."""
    try:
        token = json.loads(message.reply_token or "{}")
    except ValueError as exc:
        raise BadRequest("not a Slack reply token", method="response_url", chat_id=message.chat_id) from exc
    channel = token.get("channel") or message.chat_id
    if token.get("response_url") and session is not None:
        hook = AsyncWebhookClient(token["response_url"], session=session, retry_handlers=[])
        # Given None, slack-sdk took $HTTPS_PROXY whatever $no_proxy says; None here is the session's own choice.
        hook.proxy = proxy_for(token["response_url"])
        # Held as a post is: chat.postEphemeral documents message_limit_exceeded, and a URL answering a 429 that
        # reads so (its body is the error) is the same limit; the URL stays valid 30 minutes, the hold a minute.
        with limit.posting("response_url", channel, once=once):
            try:
                resp = await hook.send(text=slack_mrkdwn.render(scalar_text(message.text)),
                                       response_type="ephemeral")
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                raise translate_exception(exc, "response_url", channel) from exc
            if 200 <= resp.status_code < 300:
                return Sent(message_id=f"{EPHEMERAL}{uuid.uuid4().hex}")
            error = translate("response_url", channel, status=resp.status_code, error=resp.body or None,
                              retry_after=(resp.headers or {}).get("Retry-After"))
            if isinstance(error, RateLimited | NetworkError):
                raise error
        # Refused (expired or used up): not shown, so chat.postEphemeral cannot show it twice.
    with limit.posting("chat.postEphemeral", channel, once=once):
        resp = await formatted("chat.postEphemeral", channel, message.text, channel=channel, user=token.get("user"))
    return Sent(message_id=f"{EPHEMERAL}{resp.get('message_ts', '')}")


def not_taken(command: Inbound) -> str:
    """The answer that ``command`` was not taken (`NOT_TAKEN`), logged as given."""
    name = command.text.split(maxsplit=1)[0]
    log.warning("slack: %s from user %s was not recorded before the gateway stopped; telling the user to send"
                " it again", name, command.user_id)
    return NOT_TAKEN.format(command=name)


def may_be_taken(command: Inbound) -> str:
    """The answer that ``command``'s hand-over was cut off (`MAY_BE_TAKEN`), logged as given."""
    name = command.text.split(maxsplit=1)[0]
    log.warning("slack: %s from user %s was still being handed over when the gateway stopped; it is answered after"
                " the restart if the gateway recorded it: telling the user so", name, command.user_id)
    return MAY_BE_TAKEN.format(command=name)


def not_handled(command: Inbound) -> str:
    """The answer that the gateway failed on ``command`` before it recorded it (`NOT_HANDLED`), logged as given."""
    name = command.text.split(maxsplit=1)[0]
    log.warning("slack: %s from user %s was dropped, the gateway failing on it; telling the user", name,
                command.user_id)
    return NOT_HANDLED.format(command=name)


async def tell(command: Inbound, text: Callable[[Inbound], str],
               answer: Callable[[Outbound], Awaitable[Sent]]) -> None:
    """Answer ``command`` with ``text(command)`` through ``answer`` (the adapter's `answer` of a command, with ``once``:
    nothing journals such a word, nor sends it again, so the workspace's message limit does not hold it back),
    ephemerally as every answer to a command. Never raises: a failure is logged."""
    name = command.text.split(maxsplit=1)[0]
    try:
        await answer(Outbound(chat_id=command.chat_id, thread_id=None, text=text(command), kind="command",
                              reply_token=command.reply_token))
    except Exception as exc:
        log.warning("slack: could not tell user %s what became of %s (%s)", command.user_id, name,
                    type(exc).__name__)


async def tell_not_taken(commands: Sequence[Inbound], answer: Callable[[Outbound], Awaitable[Sent]],
                         seconds: float, cut_off: Sequence[Inbound] = (),
                         replied: Callable[[str], bool] = lambda _token: False, *,
                         failed: Sequence[Inbound] = (), under_way: Iterable[asyncio.Future[Any]] = ()) -> None:
    """Answer each command a stop left unrecorded (acked or not, Slack never sends it again) that
    it was not taken, and each of ``cut_off`` (its hand-over cut off: `Handing`) that it may be answered
    after the restart, through ``answer`` (the adapter's `answer` of a command). All within
    ``seconds`` (the stop's grace is the gateway's to share): an answer Slack has not taken by then
    is given up. Never raises. Not one of ``cut_off`` the gateway answered already (``replied``: this process
    began an answer through its reply token, `UnderWay.replied`): the sink records, then routes, and a stop may
    cut it off after the routing answered (`/stop` or `/new`, say); Slack showed the word that an answer may
    come, and to send the command again if none does, below the answer itself. Each of ``failed`` (the
    gateway failed on it, and no acknowledgement said so) is told it could not be handled (`NOT_HANDLED`), and the
    answers ``under_way`` get the same time."""
    def unanswered(command: Inbound) -> bool:
        if command.reply_token is None or not replied(command.reply_token):
            return True
        log.info("slack: %s from user %s was still being handed over when the gateway stopped, and was answered"
                 " already: nothing more is said", command.text.split(maxsplit=1)[0], command.user_id)
        return False

    cut_off = [command for command in cut_off if unanswered(command)]
    tasks = [*under_way]
    tasks += [asyncio.ensure_future(tell(command, not_taken, answer)) for command in commands]
    tasks += [asyncio.ensure_future(tell(command, may_be_taken, answer)) for command in cut_off]
    tasks += [asyncio.ensure_future(tell(command, not_handled, answer)) for command in failed]
    if not tasks:
        return
    await asyncio.wait(tasks, timeout=seconds)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
