"""Posting, editing and deleting the Slack adapter's messages, and the threads a post makes the bot's.

Apart from the adapter (`platforms.slack`) because it is what the outbox asks of the Web API for a part (the
answers to slash commands go by `platforms.slack_commands`, files by `platforms.slack_uploads`), and the one
place that says when a thread becomes the bot's: once Slack may show what it posted there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from platforms import slack_history
from platforms.base import EditUnsupported, NetworkError, NotFound, Outbound, Sent
from platforms.slack_calls import WebApi
from platforms.slack_commands import EPHEMERAL

Remember = Callable[[str, str], None]
"""The adapter's: the thread (channel, thread ts) is the bot's, replies in it need no mention."""


async def post(web: WebApi, metadata: slack_history.Metadata, message: Outbound, remember: Remember) -> Sent:
    """chat.postMessage, with the part's key in the message's metadata (`platforms.slack_history.find_sent`)."""
    kw: dict[str, Any] = {"channel": message.chat_id}
    if message.thread_id:
        kw["thread_ts"] = message.thread_id
    event = {"event_type": slack_history.SENT_EVENT, "event_payload": {"key": message.idempotency_key}}
    # Answering a "!help" typed in people's thread does not make the thread the bot's.
    with posting_in(message, remember, message.kind != "command"):
        resp = await metadata.post(
            lambda **extra: web.formatted("chat.postMessage", message.chat_id, message.text, **kw, **extra),
            event if message.idempotency_key else None)
    return Sent(message_id=resp["ts"])


@contextlib.contextmanager
def posting_in(message: Outbound, remember: Remember, joins: bool = True) -> Iterator[None]:
    """The thread a post or an upload goes to becomes the bot's (``joins``) once Slack may show it: it
    went, or its answer is unknown (`NetworkError`: the outbox may find it posted and not send it again).
    Not when Slack refused it: the bot said nothing there, so people's next replies are not for it."""
    if not (message.thread_id and joins):
        yield
        return
    try:
        yield
    except NetworkError:
        remember(message.chat_id, message.thread_id)
        raise
    remember(message.chat_id, message.thread_id)


async def edit(web: WebApi, chat_id: str, message_id: str, text: str) -> None:
    """chat.update, its text read as chat.postMessage reads a post's (``parse`` ``none``). Ephemeral messages
    cannot be edited."""
    if message_id.startswith(EPHEMERAL):
        raise EditUnsupported("ephemeral messages cannot be edited", method="chat.update", chat_id=chat_id)
    # chat.update's parse defaults to "client", unlike chat.postMessage's, and an edit without one sets it so:
    # Slack keeps the text's <url|label> links escaped, and the edited message shows their markup as text.
    await web.formatted("chat.update", chat_id, text, channel=chat_id, ts=message_id, parse="none")


async def delete(web: WebApi, chat_id: str, message_id: str) -> None:
    """chat.delete; a message already gone counts as deleted. Ephemeral answers cannot be deleted."""
    if message_id.startswith(EPHEMERAL):
        raise EditUnsupported("ephemeral messages cannot be deleted", method="chat.delete", chat_id=chat_id)
    try:
        await web.call("chat.delete", chat_id, channel=chat_id, ts=message_id, caller_logs=True)
    except NotFound:
        pass
