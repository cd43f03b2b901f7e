"""The bot scopes the Slack adapter needs, checked once at start against the ones the token holds.

An app installed without one of them fails late or not at all: a missing ``files:read`` shows as a file
not taken, hours later; a missing ``*:history`` scope as nothing, since Slack just never sends those
events, and the bot looks healthy and is deaf. Slack lists the token's scopes in every Web API answer's
``x-oauth-scopes`` header, so the start's ``auth.test`` answer tells which are missing. The scopes are
those of ``deploy/slack-app-manifest.yaml`` (docs/platforms/slack.md).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from platforms.base import Forbidden

log = logging.getLogger("platforms.slack")

HEADER = "x-oauth-scopes"
ANSWERS = "chat:write"
"""Without it nothing can be answered: refused at start, not warned of (`check`)."""
NEEDED = {
    "commands": "slash commands (/stop, /new, …) will never arrive (typed as !stop, !new where the bot hears"
                " messages, they still work)",
    "files:read": "files users share will not reach the model (they are told it could not be downloaded)",
    "files:write": "files the agent sends will fail",
    "im:history": "direct messages to the bot will never arrive",
    "channels:history": "messages in public channels, mentions included, will never arrive",
    "groups:history": "messages in private channels, mentions included, will never arrive",
    "mpim:history": "messages in group DMs, mentions included, will never arrive",
    # Alone the scope brings nothing: the events it allows must be subscribed to as well.
    "channels:read": "the bot removed from a public channel, or the channel archived, stops the work there only"
                     " once Slack refuses a reply (subscribe the app to the events it allows too: member_left_channel,"
                     " channel_left, channel_archive and the rest listed in deploy/slack-app-manifest.yaml)",
    "groups:read": "the bot removed from a private channel, or the channel archived, stops the work there only"
                   " once Slack refuses a reply, and a private channel shared with another organization loses its"
                   " conversations (subscribe the app to the events it allows too: member_left_channel, group_left,"
                   " group_archive, channel_id_changed and the rest listed in deploy/slack-app-manifest.yaml)",
    "users:read": "the users a message mentions reach the model as ids (<@U0123>), not as their @names",
}
"""What stops working without each scope but `ANSWERS`: an operator may leave one out on purpose (no DMs)."""
_CLASSIC = "bot"
"""A classic Slack app's one scope, which holds all of them."""


def check(headers: Mapping[str, str] | None) -> None:
    """Warn once per needed scope the token lacks, by ``headers`` (an answer's, case-insensitive); raise
    `Forbidden` if it lacks `ANSWERS`. Nothing without the header (an older Slack, a proxy that strips it):
    its absence says nothing of the token."""
    held = listed(headers)
    if held is None:
        return
    if ANSWERS not in held:
        # A start that went on would take messages in, run their turns and give every reply up: lost for good,
        # where refused now Slack retries them, and a later start's catch-up reads back what it can.
        raise Forbidden(f"the bot token lacks the {ANSWERS} scope, without which nothing can be answered; add it"
                        " under OAuth & Permissions and reinstall the app", method="auth.test", platform="slack")
    for scope, lost in NEEDED.items():
        if scope not in held:
            log.warning("slack: the app lacks the %s scope: %s; add it under OAuth & Permissions and reinstall"
                        " the app", scope, lost)


def holds(headers: Mapping[str, str] | None, scope: str) -> bool:
    """Whether the token may hold ``scope``, by ``headers`` as in `check`: True unless they list the token's
    scopes without it (without the header, a call needing it tells)."""
    held = listed(headers)
    return held is None or scope in held


def listed(headers: Mapping[str, str] | None) -> frozenset[str] | None:
    """The scopes ``headers`` list, None when they tell nothing of them: no header, or a classic app's one
    scope that holds them all."""
    held = frozenset(scope.strip() for scope in (headers or {}).get(HEADER, "").split(",")) - {""}
    return None if not held or _CLASSIC in held else held
