"""Markdown to Slack's mrkdwn (the ``text`` of ``chat.postMessage``).

``**bold**`` becomes ``*bold*``, ``*italic*`` ``_italic_``, ``~~struck~~``
``~struck~``, each closed and reopened at every line break (Slack's end at their line) and kept
from a letter or digit, or another style, beside it by a zero-width space (Slack styles only whole
words); links ``<url|label>`` (a bare URL ``<url>``, as written, but for invisible marks at its end, a
right-to-left mark or a zero-width space, which follow it; web and mail addresses only, any
other target written out after its label); inline code and code
blocks keep their backticks (Slack shows no language; backticks in the code get zero-width spaces,
so that no three in a row end the block; inline code holding a backtick,
which Slack's cannot, becomes preformatted text between three backticks); quotes put ``> `` before
each line (Slack has one level); headings are bold lines (bold within them is left plain), lists use ``•`` or
numbers (an item's code blocks and quotes in the first column), tables become code blocks; backticks left
as text are kept apart by zero-width spaces, so three never open a block, and so are ``*``, ``_`` and
``~`` left as text that Slack would pair into a style; a line break in a link's label is a space (a
link is one line). ``&``,
``<`` and ``>`` are escaped everywhere, as Slack asks, so text never turns into a link or a mention; a
label that is a web address other than its link's is followed by the link's address instead, ``label (<url>)``.
A link reads as the address it goes to: an address shows its direction controls percent-encoded, a label none,
and a link an embedding, override or isolate opened before it still holds (not one closed, nor one on an earlier line)
is a left-to-right isolate (`bare_urls.isolated`).
"""

from __future__ import annotations

import re

from platforms.formatting.bare_urls import ISOLATE_END, ISOLATE_START, as_address, isolated, link_face, marks_at_end
from platforms.formatting.link_labels import other_address
from platforms.formatting.markdown import Context, Renderer, parser, width

_MARKERS = {"strong": "*", "em": "_", "strike": "~"}
_LINKABLE = ("http://", "https://", "mailto:")
"""What a link may open. Slack links any absolute URL, handing it to whatever the reader's computer opens
for its scheme: ``<smb://host/share|the report>``, from a page the model quotes, would open a file share
on that host (Windows signing in to it as the reader), ``<vscode://…|docs>`` an editor. Another target
is written out after the label, as on Telegram and Discord."""
_ZWSP = "\u200b"
_BACKTICK_RUN = re.compile(r"`(?=`)")
# A backtick two more follow: a zero-width space after each leaves no three in a row, which would
# close the block (replacing ``` alone left one of ```` whole).
_FENCE_IN_CODE = re.compile(r"`(?=``)")
_FENCE = "```"
# A style marker at a word's edge, where it may open a style (no letter or digit before it, no
# space after) or close one (no space before, no letter or digit after).
_EDGES = {c: re.compile(rf"(?<![^\W_]){re.escape(c)}(?=\S)|(?<=\S){re.escape(c)}(?![^\W_])") for c in "*_~"}
_OPENS = {c: re.compile(rf"(?<![^\W_]){re.escape(c)}(?=\S)") for c in "*_~"}
_CLOSES = {c: re.compile(rf"(?<=\S){re.escape(c)}(?![^\W_])") for c in "*_~"}
# Where a style's markers meet the text around them: only its paragraph says whether a letter is
# there (``**b**y``: the ``y`` comes after the style). Noncharacters, Unicode's own for internal use:
# one in the Markdown's text (never worth sending) goes the same way.
_OPEN_EDGE, _CLOSE_EDGE = "\ufdd0", "\ufdd1"
# A link is between `ISOLATE_START` and `ISOLATE_END` here: its letters are as near a style as written.
_WORD_BEFORE = re.compile(f"(?:(?<=[^\\W_])|(?<=[^\\W_]{ISOLATE_END})){_OPEN_EDGE}")
_WORD_AFTER = re.compile(f"{_CLOSE_EDGE}(?={ISOLATE_START}?[^\\W_])")
_STYLES_MEET = f"{_CLOSE_EDGE}{_OPEN_EDGE}"


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
        return _inert_markers(_BACKTICK_RUN.sub(f"`{_ZWSP}", escape(text)))

    def style(self, kind: str, inner: str, ctx: Context) -> str:
        if kind == "strong" and ctx.heading:
            return inner  # the heading is bold already, and Slack's bold holds no bold: the * would show
        return _each_line(_MARKERS[kind], inner, edges=True)

    def code_span(self, code: str, ctx: Context) -> str:
        if "`" not in code:
            return f"`{escape(code)}`"
        # Slack's inline code has no longer delimiters and no escapes, so a backtick would end it;
        # its preformatted text holds one. A zero-width space keeps a backtick at an edge from
        # lengthening the fence.
        body = _FENCE_IN_CODE.sub(f"`{_ZWSP}", escape(code))
        return f"```{_ZWSP if body.startswith('`') else ''}{body}{_ZWSP if body.endswith('`') else ''}```"

    def link(self, href: str, inner: str, label: str, ctx: Context, *, auto: bool) -> str:
        if auto and (marks := marks_at_end(label)):
            # Markdown takes them into the address; between <…> they sent the reader to …/a%E2%80%8F.
            address = label[:-len(marks)]
            target = address if href == label else parser().normalizeLink(address)  # a bare one's is as written
            return self.link(target, self.text(address, ctx), address, ctx, auto=True) + marks
        # Slack lays a link out with the text around it: none of its own direction controls, nor one before it
        # (`isolated`), is to turn it round into another address.
        inner, label, href = link_face(inner, label), link_face(label, label), as_address(href, marks=False)
        return f"{ISOLATE_START}{self._link(href, inner, label, auto=auto)}{ISOLATE_END}"

    def _link(self, href: str, inner: str, label: str, *, auto: bool) -> str:
        url = escape(href).replace("|", "%7C")
        if not href.lower().startswith(_LINKABLE):
            if not inner:
                return url
            return inner if auto or label == href else f"{inner} ({url})"
        if label == href or not inner:
            return f"<{url}>"
        if not auto and other_address(label, href):  # Slack shows only the label
            return f"{inner} (<{url}>)"
        return f"<{url}|{inner.replace('|', '¦')}>"

    def line_break(self, ctx: Context) -> str:
        # A link's ``<url|label>`` ends at its line: a quote's ``> `` (or a list item's indentation)
        # would go into the label, and the link show as its markup.
        return " " if ctx.link else "\n"

    def paragraph(self, inline: str, ctx: Context) -> str:
        return _word_edges(inline)

    def heading(self, level: int, inner: str, ctx: Context) -> str:
        return _each_line("*", _word_edges(inner))  # a setext heading may take several lines

    def code_block(self, code: str, lang: str, ctx: Context) -> str:
        # Slack has no longer fences: a ``` inside the code would end the block early.
        return f"{_FENCE}\n{_FENCE_IN_CODE.sub(f'`{_ZWSP}', escape(code))}\n{_FENCE}"

    def list_item(self, marker: str, inner: str, ctx: Context) -> str:
        # Slack has no lists: an item's later lines are indented with spaces, which in a code block
        # would be the code's own (every line of a step's command shifted right, pasted so), and
        # before a quote's ``>`` would keep it from being a quote. Those lines stay in the first
        # column. A line that is ``` alone opens or closes a block: in code, ``` is broken up.
        pad = " " * (width(marker) + 1)
        lines, in_code = [], False
        for n, line in enumerate(inner.split("\n")):
            fence = line == _FENCE
            kept = in_code or fence or not line or line.startswith(">")
            lines.append(f"{marker} {line}" if n == 0 else line if kept else pad + line)
            in_code ^= fence
        return "\n".join(lines)

    def quote(self, inner: str, ctx: Context) -> str:
        if ctx.quote:
            return inner
        return "\n".join(f"> {line}" if line else ">" for line in inner.split("\n"))


def _inert_markers(text: str) -> str:
    """``text`` with each ``*``, ``_`` or ``~`` CommonMark left as text (``\\*not bold\\*``) between
    zero-width spaces when, on its line, one at a word's start pairs with one at a word's end: Slack
    has no escapes and would style what lies between. Whether Slack counts the space as a word's edge
    or not, one on each side leaves the marker neither opening nor closing. A marker within a word
    (``snake_case``) or alone (``*.py``, ``~/src``) is left as it is, copied as typed."""
    if not any(c in text for c in "*_~"):
        return text
    lines = text.split("\n")
    for n, line in enumerate(lines):
        for marker, edges in _EDGES.items():
            first = _OPENS[marker].search(line)
            if first is not None and _CLOSES[marker].search(line, first.end() + 1):
                line = edges.sub(f"{_ZWSP}{marker}{_ZWSP}", line)
        lines[n] = line
    return "\n".join(lines)


def _each_line(marker: str, inner: str, *, edges: bool = False) -> str:
    """``inner`` between ``marker``s, line by line: Slack's ``*bold*`` (``_``, ``~``) ends at its line,
    so markers around two lines would show, and leave both lines plain. ``edges``: each marker's outer
    side marked for `_word_edges`."""
    start, end = (f"{_OPEN_EDGE}{marker}", f"{marker}{_CLOSE_EDGE}") if edges else (marker, marker)
    return "\n".join(f"{start}{line}{end}" if line.strip() else line for line in inner.split("\n"))


def _word_edges(rendered: str) -> str:
    """``rendered`` with a zero-width space between a style's marker and a letter or digit outside it
    (``x **b**y``, ``這是**粗體**文字``), the marks of its edges gone. Markdown styles part of a word; Slack
    only a whole one: ``*b*y`` would show its asterisks. So between two styles that meet (``**a**__b__``,
    ``**a***b*``): Slack reads ``*a**b*`` as one style holding two asterisks, and a marker touching another
    as no edge of a word (``*a*_b_``). The zero-width space is the edge of a word to Slack, and shows
    nothing (a word copied from the message holds it). Elsewhere nothing is added: a style between spaces
    or punctuation, or nested in another (``_*a*_``), is read as it is."""
    if _OPEN_EDGE not in rendered and _CLOSE_EDGE not in rendered:
        return rendered
    rendered = _WORD_AFTER.sub(_ZWSP, _WORD_BEFORE.sub(_ZWSP, rendered)).replace(_STYLES_MEET, _ZWSP)
    return rendered.replace(_OPEN_EDGE, "").replace(_CLOSE_EDGE, "")


_RENDERER = SlackMrkdwn()


def render(markdown: str) -> str:
    """Slack mrkdwn for ``markdown``."""
    # The marks are the renderer's own: a noncharacter in the model's text is never worth sending.
    return isolated(_RENDERER.render(markdown.replace(ISOLATE_START, "").replace(ISOLATE_END, "")))
