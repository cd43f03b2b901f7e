"""Markdown to Telegram's HTML (``parse_mode=HTML``).

Bold, italic and strikethrough become ``<b>``, ``<i>``, ``<s>``; inline code
``<code>``; fenced code ``<pre><code class="language-x">`` (``<pre>`` without a
language); quotes ``<blockquote>``; links ``<a href>`` (http, https and tg only, not a
``tg://user`` mention; any other target is written out after its label, a ``mailto:`` one as the bare
address, which Telegram links itself; a label reading as another address,
``[https://bank.example](https://evil.example)``, is followed by a link to the address as its label,
`link_labels.other_address`; a web address written as itself stays as written, which
Telegram links too, unless Telegram would end it elsewhere: then it is a link to itself). Headings are
bold lines, lists use ``•`` or numbers, rules a line of ``─``, tables a ``<pre>``
block. Everything else is text, with ``&``, ``<`` and ``>`` escaped.
A link reads as the address it goes to: an address shows its direction controls percent-encoded, a label none,
and a link an embedding, override or isolate opened before it still holds (not one closed, nor one on an earlier line)
is a left-to-right isolate (`bare_urls.isolated`).

Telegram's nesting rules are kept, so a rendering is never refused for them:
nothing is nested in code, a link holds no code (its label is plain text then),
quotes are never nested (an inner quote joins the outer one), and a code block
inside a quote ends the quote and starts it again after the block.

`visible_text` is what Telegram shows (and counts, in UTF-16 units) once it has
parsed the HTML; `entity_count` how many formatted spans (entities) it makes of
it, of which Telegram keeps `MAX_ENTITIES`.
"""

from __future__ import annotations

import html
import re

from platforms.formatting.bare_urls import ISOLATE_END, ISOLATE_START, as_address, isolated, link_face, marks_at_end
from platforms.formatting.link_labels import other_address
from platforms.formatting.markdown import Context, Renderer
from platforms.formatting.telegram_urls import candidates, linked_as_is, refused, taken_out

_TAG = re.compile(r"<[^>]*>")
_ENTITY_TAG = re.compile(r"<(?:b|i|s|code|pre|a|blockquote)[ >]")
MAX_ENTITIES = 100
"""Telegram keeps a message's first 100 entities and ignores the formatting past them, links'
addresses included, without an error (found by experiment: python-telegram-bot's MAX_MESSAGE_ENTITIES)."""
_EMPTY_QUOTE = re.compile(r"<blockquote>\s*</blockquote>")
_QUOTE_OPEN_SPACE = re.compile(r"<blockquote>(\s+)")
_QUOTE_CLOSE_SPACE = re.compile(r"(\s+)</blockquote>")
_LINKABLE = ("http://", "https://", "tg://")
"""What Telegram links as sent. It reads any other target as an http address or drops the link: a
labelled ``mailto:help@example.com`` went to http://mailto:help@example.com/, the web site example.com
(TDLib's LinkManager::check_link, td/telegram/LinkManager.cpp)."""
_USER = re.compile(r"tg://user/?\?", re.IGNORECASE)
"""A link to a user, which Telegram makes a mention (a ``text_mention``) that notifies them, whatever its label says
(``[the docs](tg://user?id=…)``): a model repeating a member's words would ping whom they chose. Any ``tg://user``
link with a query, as TDLib's LinkManager::get_link_user_id reads one."""
_STYLE_TAGS = {"strong": "b", "em": "i", "strike": "s"}
_WEB = ("http://", "https://")
# A web address written as itself, marked until the text around it is known (`_addresses`): noncharacters,
# as the Slack and Discord renderers' marks are.
_ADDRESS_START, _ADDRESS_END = "\ufdd4", "\ufdd5"
_MARKED = re.compile(f"{_ADDRESS_START}([^{_ADDRESS_START}{_ADDRESS_END}]*){_ADDRESS_END}")


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


class TelegramHtml(Renderer):
    def shown(self, rendered: str) -> str:
        return visible_text(rendered)

    def text(self, text: str, ctx: Context) -> str:
        return _escape(text)

    def style(self, kind: str, inner: str, ctx: Context) -> str:
        tag = _STYLE_TAGS[kind]
        return f"<{tag}>{inner}</{tag}>" if inner else ""

    def code_span(self, code: str, ctx: Context) -> str:
        return _escape(code) if ctx.link else f"<code>{_escape(code)}</code>"

    def link(self, href: str, inner: str, label: str, ctx: Context, *, auto: bool) -> str:
        # Telegram lays a link out with the text around it: none of its own direction controls, nor one before it
        # (`isolated`), is to turn it round into another address. Telegram takes embeddings and overrides out of
        # a message itself, but keeps isolates and marks (``https://5.6.7.8\u200f@1.2.3.4/`` read as host 5.6.7.8).
        if auto:
            # Telegram links a web or mail address written out. Invisible marks Markdown takes in at a web
            # address's end (a right-to-left mark after an address in Hebrew, a zero-width space) are no part of the
            # page's address, and Telegram ends the address before them.
            web = label.lower().startswith(_WEB)
            end = len(label) - len(marks_at_end(label)) if web else len(label)
            address = _escape(as_address(label[:end]))
            if web:  # Telegram's to link, if it links it so
                address = f"{_ADDRESS_START}{address}{_ADDRESS_END}"
            return f"{ISOLATE_START}{address}{ISOLATE_END}{_escape(label[end:])}"
        inner, label, href = link_face(inner, label), link_face(label, label), as_address(href)
        if not href.lower().startswith(_LINKABLE) or _USER.match(href):
            # Telegram links a mail address written out; other targets cannot be links at all, nor be mentions.
            target = href[7:] if href.lower().startswith("mailto:") else href
            shown = inner if label == target else f"{inner} ({_escape(target)})"
        elif inner and other_address(label, href):
            # Telegram shows the label, and the address only on a tap: it follows, a link to itself.
            shown = f'{inner} (<a href="{html.escape(href, quote=True)}">{_escape(href)}</a>)'
        else:
            shown = f'<a href="{html.escape(href, quote=True)}">{inner or _escape(href)}</a>'
        return f"{ISOLATE_START}{shown}{ISOLATE_END}"

    def heading(self, level: int, inner: str, ctx: Context) -> str:
        return f"<b>{inner}</b>"

    def code_block(self, code: str, lang: str, ctx: Context) -> str:
        if lang:
            return f'<pre><code class="language-{lang}">{_escape(code)}</code></pre>'
        return f"<pre>{_escape(code)}</pre>"

    def quote(self, inner: str, ctx: Context) -> str:
        if ctx.quote:
            return inner
        body = inner.replace("<pre>", "</blockquote><pre>").replace("</pre>", "</pre><blockquote>")
        body = _EMPTY_QUOTE.sub("", f"<blockquote>{body}</blockquote>")
        # Line breaks at a quote's edges belong outside it, between the blocks.
        return _QUOTE_CLOSE_SPACE.sub(r"</blockquote>\1", _QUOTE_OPEN_SPACE.sub(r"\1<blockquote>", body))

    def list_item(self, marker: str, inner: str, ctx: Context) -> str:
        # Indenting a continuation line inside <pre> would change the code: leave those alone.
        pad = " " * (len(marker) + 1)
        lines, in_pre = [], False
        for n, line in enumerate(inner.split("\n")):
            lines.append(f"{marker} {line}" if n == 0 else (line if in_pre or not line else pad + line))
            in_pre = (in_pre or "<pre>" in line) and "</pre>" not in line
        return "\n".join(lines)


_RENDERER = TelegramHtml()


def render(markdown: str) -> str:
    """Telegram HTML for ``markdown``."""
    # The marks are the renderer's own: a noncharacter in the model's text is never worth sending.
    for mark in (_ADDRESS_START, _ADDRESS_END, ISOLATE_START, ISOLATE_END):
        markdown = markdown.replace(mark, "")
    # Isolated first: where Telegram ends an address it links by itself (`_addresses`) depends on the U+2069.
    return _addresses(isolated(_RENDERER.render(markdown)))


def visible_text(rendered: str) -> str:
    """The text Telegram shows for HTML made by `render` (tags removed, entities decoded)."""
    return html.unescape(_TAG.sub("", rendered))


def entity_count(rendered: str) -> int:
    """How many entities Telegram makes of HTML made by `render`: one per tag, a code block with
    its language (``<pre><code class>``) one."""
    return len(_ENTITY_TAG.findall(rendered)) - rendered.count("<pre><code ")


def _addresses(rendered: str) -> str:
    """``rendered`` with each address `TelegramHtml.link` marked left as written where Telegram links that
    address by itself, and sent as a link to itself (a text_link: exact) where it would link another or none."""
    if _ADDRESS_START not in rendered:
        return rendered
    text, spans = "", []
    for n, piece in enumerate(_MARKED.split(visible_text(rendered))):
        piece = taken_out(piece)
        if n % 2:
            spans.append((len(text), len(text) + len(piece)))
        text += piece
    found = candidates(text)
    kept = iter([linked_as_is(text, start, end, found) for start, end in spans])

    def one(m: re.Match[str]) -> str:
        if next(kept) or refused(html.unescape(m.group(1))):
            return m.group(1)
        return f'<a href="{html.escape(html.unescape(m.group(1)), quote=True)}">{m.group(1)}</a>'

    return _MARKED.sub(one, rendered)
