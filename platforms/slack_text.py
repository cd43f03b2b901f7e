"""The ``text`` of a Slack message event, as the model reads it.

Slack writes links, channels, user groups and special mentions between ``<`` and ``>``, the
name Slack shows (when the event carries it) after a ``|``: ``<https://example.com/a|the docs>``,
``<http://example.com|example.com>`` for a domain typed bare, ``<#C0123|general>``,
``<!subteam^S0123|@devs>``, ``<!here>``. Read raw, the model saw ids where Slack shows names,
and took ``http://example.com|example.com`` for an address. So a link becomes the text the user
typed (a bare address or domain as written) or Markdown's ``[label](url)``; a channel ``#name``;
a user group its ``@handle``; ``@here``, ``@channel`` and ``@everyone`` as Slack shows them; a
date its fallback text; a user ``@`` and the handle the adapter looked up (`platforms.slack_names`). What
carries no name (``<#C0123>``, a user whose handle is not known) stays as Slack wrote it, the id being all
there is. Then ``&amp;``, ``&lt;`` and ``&gt;`` become the characters typed: a ``<`` a user typed is never
one of these.

A forwarded message is not in ``text`` at all (`with_forwarded`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from platforms.formatting.slack_mrkdwn import unescape

_ANGLED = re.compile(r"<([^<>|]*)(?:\|([^<>]*))?>")
_SPECIAL = {"here": "@here", "channel": "@channel", "everyone": "@everyone"}
_SCHEMES = ("https://", "http://", "mailto:")
_USER = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^<>]*)?>")
NO_NAMES: Mapping[str, str] = MappingProxyType({})


def readable(text: str, names: Mapping[str, str] = NO_NAMES) -> str:
    """``text`` as the model reads it, each user it mentions by the handle ``names`` gives their id."""
    return unescape(_ANGLED.sub(lambda match: _plain(match, names), text))


def mentioned(text: str) -> set[str]:
    """The ids of the users ``text`` (as Slack writes it) mentions."""
    return set(_USER.findall(text))


def with_forwarded(text: str, attachments: Any, names: Mapping[str, str] = NO_NAMES) -> str:
    """``text`` (already `readable`) followed by the messages forwarded with it, quoted under their
    author and channel, read with ``names`` as `readable` reads. Slack lists a forwarded (shared) message
    in ``attachments``, flagged ``is_share`` and ``is_msg_unfurl``, and never in ``text``, which holds only
    the comment typed with it; other attachments (link previews) are left out."""
    parts = [text] if text else []
    for item in forwarded(attachments):
        body = readable(str(item.get("text") or ""), names).strip()
        if not body:
            continue
        where = f" in #{item['channel_name']}" if item.get("channel_name") else ""
        quoted = "\n".join(f"> {line}" if line else ">" for line in body.split("\n"))
        parts.append(f"Forwarded message from {item.get('author_name') or 'someone'}{where}:\n{quoted}")
    return "\n\n".join(parts)


def forwarded(attachments: Any) -> Iterator[dict[str, Any]]:
    """The messages forwarded with a message, of its ``attachments``."""
    for item in attachments if isinstance(attachments, list) else ():
        if isinstance(item, dict) and (item.get("is_share") or item.get("is_msg_unfurl")):
            yield item


def _plain(match: re.Match[str], names: Mapping[str, str]) -> str:
    target, label = match.group(1), match.group(2) or ""
    if target.startswith("#"):
        return f"#{label}" if label else match.group(0)
    if target.startswith("@"):
        # The handle looked up before a label, which whoever wrote the text chose.
        name = names.get(target[1:]) or label.lstrip("@")
        return f"@{name}" if name else match.group(0)
    if target.startswith("!"):
        special = _SPECIAL.get(target[1:])
        return special or label or match.group(0)
    if not label or label == target:
        return target
    if any(target.startswith(s) and target[len(s):] in (label, f"{label}/") for s in _SCHEMES):
        return label  # a domain or address typed bare, which Slack linked
    return f"[{label}]({target})"
