"""The words of a Slack message's blocks, as Slack writes a message's ``text``: what the model reads of a message
an app posted with blocks alone, or beside a fallback text that shows nothing."""

from __future__ import annotations

from typing import Any


def blocks_text(blocks: Any) -> str:
    """The words of a message's blocks, written as Slack writes a message's ``text`` (``<@U0123>``,
    ``<https://…|label>``, ``:wave:``): rich text as typed, and the text of a section (its fields too), a
    header or a context. Slack's clients write ``text`` beside the blocks; a message posted through the
    API may carry blocks alone."""
    lines: list[str] = []
    for block in blocks if isinstance(blocks, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "rich_text":
            lines += (_rich(element) for element in block.get("elements") or ())
            continue
        texts = [block.get("text"), *(block.get("fields") or ()), *(block.get("elements") or ())]
        lines += (t["text"] for t in texts if isinstance(t, dict) and isinstance(t.get("text"), str))
    return "\n".join(line for line in lines if line.strip())


_RICH_TEXT = {
    "user": lambda e: f"<@{e.get('user_id')}>", "channel": lambda e: f"<#{e.get('channel_id')}>",
    "usergroup": lambda e: f"<!subteam^{e.get('usergroup_id')}>", "broadcast": lambda e: f"<!{e.get('range')}>",
    "emoji": lambda e: f":{e.get('name')}:", "date": lambda e: str(e.get("fallback") or ""),
    "link": lambda e: f"<{e.get('url')}|{e['text']}>" if e.get("text") else f"<{e.get('url')}>",
}


def _rich(element: Any) -> str:
    """A rich text element as Slack writes it in ``text``: a list's items each on a line of its own."""
    if not isinstance(element, dict):
        return ""
    kind, inner = element.get("type"), element.get("elements")
    if kind == "rich_text_list":
        return "\n".join(f"- {_rich(item)}" for item in inner or ())
    if isinstance(inner, list):  # a section, preformatted text, a quote
        return "".join(_rich(item) for item in inner)
    return _RICH_TEXT[kind](element) if kind in _RICH_TEXT else str(element.get("text") or "")
