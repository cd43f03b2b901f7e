"""Whom a message of the bot pings, as Discord works it out from the content and the request's
``allowed_mentions`` (Discord's "Allowed Mentions Object"):

- a ``<@id>`` or ``<@!id>`` pings that user, ``<@&id>`` that role, ``@everyone`` and ``@here``
  everyone, each only as far as ``allowed_mentions`` lets it: ``parse`` names the kinds
  (``users``, ``roles``, ``everyone``) pinged wherever they appear, ``users`` and ``roles`` list
  the ids pinged besides; naming a kind in ``parse`` and listing ids of it is refused (400);
- no ``allowed_mentions`` at all pings everything the content names, on an edit too (Discord
  works the pings of an edited content out afresh, never from what the message was created with).

Discord also checks the bot may ping everyone and a role that is not mentionable; the fake does not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_USER = re.compile(r"<@!?(\d+)>")
_ROLE = re.compile(r"<@&(\d+)>")
_EVERYONE = re.compile(r"@(?:everyone|here)\b")
_KINDS = frozenset({"users", "roles", "everyone"})


class Refused(ValueError):
    """``allowed_mentions`` Discord answers with 400 50035 Invalid Form Body."""


@dataclass(frozen=True)
class Pings:
    """Who a message notifies: what Discord returns as ``mentions``, ``mention_roles`` and
    ``mention_everyone``."""

    users: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    everyone: bool = False


def pings(content: str, allowed: dict[str, Any] | None) -> Pings:
    """The pings of ``content`` under ``allowed`` (None: the request had no ``allowed_mentions``)."""
    if allowed is None:
        allowed = {"parse": sorted(_KINDS)}
    parse = set(allowed.get("parse") or ())
    users = {str(u) for u in allowed.get("users") or ()}
    roles = {str(r) for r in allowed.get("roles") or ()}
    if parse - _KINDS:
        raise Refused(f"unknown allowed_mentions.parse {sorted(parse - _KINDS)}")
    if ("users" in parse and users) or ("roles" in parse and roles):
        raise Refused("allowed_mentions.parse cannot name a kind whose ids are listed too")
    named_users = dict.fromkeys(_USER.findall(content))
    named_roles = dict.fromkeys(_ROLE.findall(content))
    return Pings(
        users=tuple(u for u in named_users if "users" in parse or u in users),
        roles=tuple(r for r in named_roles if "roles" in parse or r in roles),
        everyone="everyone" in parse and _EVERYONE.search(content) is not None,
    )
