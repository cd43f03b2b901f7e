"""Slack's slash commands: the `Inbound` a command's payload becomes, and its ephemeral answer.

Apart from the adapter (`platforms.slack`) because a command comes and is answered outside the
conversation: acked empty, answered through the payload's ``response_url`` (valid 30 minutes,
5 uses; works where the bot is not a channel member), else with ``chat.postEphemeral``. The
answer's message id starts with `EPHEMERAL`: such a message cannot be edited or deleted.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from slack_sdk.webhook.async_client import AsyncWebhookClient

from platforms.base import BadRequest, Inbound, Outbound, RateLimited, Sent, scalar_text
from platforms.formatting import slack_mrkdwn
from platforms.slack_errors import translate, translate_exception

EPHEMERAL = "ephemeral:"


def inbound_of(platform: str, body: dict[str, Any]) -> Inbound:
    """The command as the gateway takes it; its ``reply_token`` is what `answer` needs."""
    channel, user = body["channel_id"], body["user_id"]
    token = json.dumps({"response_url": body.get("response_url"), "channel": channel, "user": user})
    return Inbound(
        # Not the payload's user_name: Slack says not to rely on it (no longer unique, being phased
        # out); access goes by the user id, as it does for messages.
        platform=platform, chat_id=channel, thread_id=None, user_id=user, user_name=None,
        text=f"{body['command']} {body.get('text') or ''}".strip(),
        event_id=f"command:{body.get('trigger_id') or body.get('response_url')}", is_command=True,
        is_private=channel.startswith("D"), reply_token=token,
    )


async def answer(message: Outbound, session: aiohttp.ClientSession | None,
                 formatted: Callable[..., Awaitable[Any]]) -> Sent:
    """Answer through the command's ``response_url`` while it works, else with ``chat.postEphemeral``
    through ``formatted`` (the adapter's call with the Markdown rendered)."""
    try:
        token = json.loads(message.reply_token or "{}")
    except ValueError as exc:
        raise BadRequest("not a Slack reply token", method="response_url", chat_id=message.chat_id) from exc
    channel = token.get("channel") or message.chat_id
    if token.get("response_url") and session is not None:
        hook = AsyncWebhookClient(token["response_url"], session=session, retry_handlers=[])
        try:
            resp = await hook.send(text=slack_mrkdwn.render(scalar_text(message.text)),
                                   response_type="ephemeral")
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise translate_exception(exc, "response_url", channel) from exc
        if resp.status_code == 200:
            return Sent(message_id=f"{EPHEMERAL}{uuid.uuid4().hex}")
        error = translate("response_url", channel, status=resp.status_code, error=resp.body or None,
                          retry_after=(resp.headers or {}).get("Retry-After"))
        if isinstance(error, RateLimited):
            raise error
        # Expired or used up: answer with chat.postEphemeral instead.
    resp = await formatted("chat.postEphemeral", channel, message.text, channel=channel, user=token.get("user"))
    return Sent(message_id=f"{EPHEMERAL}{resp.get('message_ts', '')}")
