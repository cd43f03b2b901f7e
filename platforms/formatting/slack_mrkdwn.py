"""Markdown to Slack's mrkdwn (the ``text`` of ``chat.postMessage``).

``**bold**`` becomes ``*bold*``, ``*italic*`` ``_italic_``, ``~~struck~~``
``~struck~``; links ``<url|label>`` (a bare URL ``<url>``, as written); inline code and code
blocks keep their backticks (Slack shows no language; three backticks in the code
get a zero-width space, or they would end the block; inline code holding a backtick,
which Slack's cannot, becomes preformatted text between three backticks); quotes put ``> `` before
each line (Slack has one level); headings are bold lines (bold within them is left plain), lists use ``•`` or
numbers, tables become code blocks; backticks left as text are kept apart by zero-width spaces, so
three never open a block; a line break in a link's label is a space (a link is one line). ``&``,
``<`` and ``>`` are escaped everywhere, as Slack asks, so text never turns into a link or a mention.
"""

from __future__ import annotations

import re

from platforms.formatting.markdown import Context, Renderer

_MARKERS = {"strong": "*", "em": "_", "strike": "~"}
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_ZWSP = "\u200b"
_BROKEN_FENCE = f"`{_ZWSP}``"  # a zero-width space keeps three backticks from closing a block
_BACKTICK_RUN = re.compile(r"`(?=`)")


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape(text: str) -> str:
    """The characters a user typed, from the ``text`` of a message event, where Slack escaped
    them; its ``<…>`` links and mentions stay as they are."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


class SlackMrkdwn(Renderer):
    def text(self, text: str, ctx: Context) -> str:
        # Backticks CommonMark left as text, kept apart: Slack would read three as a fence, and pair
        # it with the next one, a code block's perhaps.
        return _BACKTICK_RUN.sub(f"`{_ZWSP}", escape(text))

    def style(self, kind: str, inner: str, ctx: Context) -> str:
        if kind == "strong" and ctx.heading:
            return inner  # the heading is bold already, and Slack's bold holds no bold: the * would show
        marker = _MARKERS[kind]
        return f"{marker}{inner}{marker}" if inner else ""

    def code_span(self, code: str, ctx: Context) -> str:
        if "`" not in code:
            return f"`{escape(code)}`"
        # Slack's inline code has no longer delimiters and no escapes, so a backtick would end it;
        # its preformatted text holds one. A zero-width space keeps a backtick at an edge from
        # lengthening the fence.
        body = escape(code).replace("```", _BROKEN_FENCE)
        return f"```{_ZWSP if body.startswith('`') else ''}{body}{_ZWSP if body.endswith('`') else ''}```"

    def link(self, href: str, inner: str, label: str, ctx: Context, *, auto: bool) -> str:
        url = escape(href).replace("|", "%7C")
        if not _SCHEME.match(href):
            return f"{inner} ({url})"  # Slack links only absolute URLs
        if label == href or not inner:
            return f"<{url}>"
        return f"<{url}|{inner.replace('|', '¦')}>"

    def line_break(self, ctx: Context) -> str:
        # A link's ``<url|label>`` ends at its line: a quote's ``> `` (or a list item's indentation)
        # would go into the label, and the link show as its markup.
        return " " if ctx.link else "\n"

    def heading(self, level: int, inner: str, ctx: Context) -> str:
        return f"*{inner}*"

    def code_block(self, code: str, lang: str, ctx: Context) -> str:
        # Slack has no longer fences: a ``` inside the code would end the block early.
        return f"```\n{escape(code).replace('```', _BROKEN_FENCE)}\n```"

    def quote(self, inner: str, ctx: Context) -> str:
        if ctx.quote:
            return inner
        return "\n".join(f"> {line}" if line else ">" for line in inner.split("\n"))


_RENDERER = SlackMrkdwn()


def render(markdown: str) -> str:
    """Slack mrkdwn for ``markdown``."""
    return _RENDERER.render(markdown)
