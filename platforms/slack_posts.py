"""Posting, editing and deleting the Slack adapter's messages, and the threads a post makes the bot's.

Apart from the adapter (`platforms.slack`) because it is what the outbox asks of the Web API for a part (the
answers to slash commands go by `platforms.slack_commands`, files by `platforms.slack_uploads`), the one
place that says when a thread becomes the bot's: once Slack may show what it posted there, and what the adapter
keeps of the edits Slack keeps failing to make (`StuckEdits`); the workspace's message limit is
`platforms.slack_message_limit`'s. Logged under ``platforms.slack``.
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from platforms import slack_history
from platforms.base import EditUnsupported, NetworkError, NotFound, Outbound, Sent
from platforms.recent import remember as keep_recent
from platforms.slack_calls import WebApi
from platforms.slack_commands import EPHEMERAL
from platforms.slack_errors import UpdateFailed
from platforms.slack_message_limit import MessageLimit

log = logging.getLogger("platforms.slack")

Remember = Callable[[str, str], None]
"""The adapter's: the thread (channel, thread ts) is the bot's, replies in it need no mention."""
EDIT_TRIES = 5
"""Edits of one message in a row that Slack answers ``update_failed`` before `StuckEdits` gives them up."""
KEPT_STUCK = 1000
"""Messages whose failed edits `StuckEdits` counts at most, the most recent."""


class StuckEdits:
    """Edits Slack keeps answering ``update_failed`` ("Internal update failure") for, per message. It passes,
    so such an edit is tried again (`UpdateFailed` is a `NetworkError`); but one message's may fail for as long
    as it is edited, and the outbox tries an edit of a progress card for as long as the card lives (once a
    minute, for hours). After `EDIT_TRIES` in a row the edit is refused as one Slack cannot make
    (`EditUnsupported`), with one warning: the outbox sends its text as a new message, as for a message too old to
    edit, and later edits go to that one. Left as it read, a card would say "working" for good. Its later edits are
    tried once each; one that succeeds ends the count."""

    def __init__(self, tries: int = EDIT_TRIES, keep: int = KEPT_STUCK) -> None:
        self._failed: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._tries, self._keep = tries, keep

    def failed(self, chat_id: str, message_id: str, exc: UpdateFailed) -> bool:
        """Count a failed edit: whether it is given up (the message cannot be edited, for now)."""
        count = self._failed.get((chat_id, message_id), 0) + 1
        keep_recent(self._failed, (chat_id, message_id), count, self._keep)
        if count == self._tries:
            log.warning("slack: message %s in channel %s not edited: Slack failed %d edits of it in a row (%s); the"
                        " new text is sent as a new message, and its later edits are tried once each", message_id,
                        chat_id, count, exc)
        return count >= self._tries

    def edited(self, chat_id: str, message_id: str) -> None:
        self._failed.pop((chat_id, message_id), None)


async def post(web: WebApi, metadata: slack_history.Metadata, message: Outbound, remember: Remember,
               limit: MessageLimit) -> Sent:
    """chat.postMessage, with the part's key in the message's metadata (`platforms.slack_history.find_sent`),
    unless the workspace's message ``limit`` holds."""
    kw: dict[str, Any] = {"channel": message.chat_id}
    if message.thread_id:
        kw["thread_ts"] = message.thread_id
    event = {"event_type": slack_history.SENT_EVENT, "event_payload": {"key": message.idempotency_key}}
    # Answering a "!help" typed in people's thread does not make the thread the bot's.
    with limit.posting("chat.postMessage", message.chat_id), posting_in(message, remember, message.kind != "command"):
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


async def edit(web: WebApi, chat_id: str, message_id: str, text: str, stuck: StuckEdits) -> None:
    """chat.update, its text read as chat.postMessage reads a post's (``parse`` ``none``); `EditUnsupported` once
    ``stuck`` gives the message's edits up. Ephemeral messages cannot be edited."""
    if message_id.startswith(EPHEMERAL):
        raise EditUnsupported("ephemeral messages cannot be edited", method="chat.update", chat_id=chat_id)
    try:
        # chat.update's parse defaults to "client", unlike chat.postMessage's, and an edit without one sets it so:
        # Slack keeps the text's <url|label> links escaped, and the edited message shows their markup as text.
        await web.formatted("chat.update", chat_id, text, channel=chat_id, ts=message_id, parse="none")
    except UpdateFailed as exc:
        if stuck.failed(chat_id, message_id, exc):
            raise EditUnsupported(f"chat.update: Slack failed {EDIT_TRIES} edits of this message in a row"
                                  " (update_failed)", method="chat.update", chat_id=chat_id) from exc
        raise
    stuck.edited(chat_id, message_id)


async def delete(web: WebApi, chat_id: str, message_id: str) -> None:
    """chat.delete; a message already gone counts as deleted. Ephemeral answers cannot be deleted."""
    if message_id.startswith(EPHEMERAL):
        raise EditUnsupported("ephemeral messages cannot be deleted", method="chat.delete", chat_id=chat_id)
    try:
        await web.call("chat.delete", chat_id, channel=chat_id, ts=message_id, caller_logs=True)
    except NotFound:
        pass
