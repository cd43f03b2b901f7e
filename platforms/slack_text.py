"""The ``text`` of a Slack message event, as the model reads it.

Slack writes links, channels, user groups and special mentions between ``<`` and ``>``, the
name Slack shows (when the event carries it) after a ``|``: ``<https://example.com/a|the docs>``,
``<http://example.com|example.com>`` for a domain typed bare, ``<#C0123|general>``,
``<!subteam^S0123|@devs>``, ``<!here>``. Read raw, the model saw ids where Slack shows names,
and took ``http://example.com|example.com`` for an address. So a link becomes the text the user
typed (a bare address or domain as written) or Markdown's ``[label](url)``; a channel ``#name``;
a user group its ``@handle``; ``@here``, ``@channel`` and ``@everyone`` as Slack shows them; a
date its fallback text. What carries no name (``<@U0123>``, ``<#C0123>``) stays as Slack wrote
it, the id being all there is. Then ``&amp;``, ``&lt;`` and ``&gt;`` become the characters typed:
a ``<`` a user typed is never one of these.

A forwarded message is not in ``text`` at all (`with_forwarded`).
"""

from __future__ import annotations

import re
from typing import Any

from platforms.formatting.slack_mrkdwn import unescape

_ANGLED = re.compile(r"<([^<>|]*)(?:\|([^<>]*))?>")
_SPECIAL = {"here": "@here", "channel": "@channel", "everyone": "@everyone"}
_SCHEMES = ("https://", "http://", "mailto:")


def readable(text: str) -> str:
    return unescape(_ANGLED.sub(_plain, text))


def with_forwarded(text: str, attachments: Any) -> str:
    """``text`` (already `readable`) followed by the messages forwarded with it, quoted under their
    author and channel. Slack lists a forwarded (shared) message in ``attachments``, flagged
    ``is_share`` and ``is_msg_unfurl``, and never in ``text``, which holds only the comment typed
    with it; other attachments (link previews) are left out."""
    parts = [text] if text else []
    for item in attachments if isinstance(attachments, list) else ():
        if not isinstance(item, dict) or not (item.get("is_share") or item.get("is_msg_unfurl")):
            continue
        body = readable(str(item.get("text") or "")).strip()
        if not body:
            continue
        where = f" in #{item['channel_name']}" if item.get("channel_name") else ""
        quoted = "\n".join(f"> {line}" if line else ">" for line in body.split("\n"))
        parts.append(f"Forwarded message from {item.get('author_name') or 'someone'}{where}:\n{quoted}")
    return "\n\n".join(parts)


def _plain(match: re.Match[str]) -> str:
    target, label = match.group(1), match.group(2) or ""
    if target.startswith("#"):
        return f"#{label}" if label else match.group(0)
    if target.startswith("@"):
        return f"@{label.lstrip('@')}" if label else match.group(0)
    if target.startswith("!"):
        special = _SPECIAL.get(target[1:])
        return special or label or match.group(0)
    if not label or label == target:
        return target
    if any(target.startswith(s) and target[len(s):] in (label, f"{label}/") for s in _SCHEMES):
        return label  # a domain or address typed bare, which Slack linked
    return f"[{label}]({target})"
