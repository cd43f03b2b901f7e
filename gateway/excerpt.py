"""Cutting the model's Markdown short for one line of a status message: the progress card's
lines, ``/agents``' goals and summaries.

A cut at a fixed number of characters can halve what a reader sees as one character (a
flag, an emoji with a skin tone) or leave a ``**``, a backtick or a link open, which the
platform then shows as typed or applies to the rest of the message. `shorten` cuts
between whole characters (`gateway.graphemes`), never inside a link or a marker, and
closes the styles it cuts through (`gateway.markdown_structure`). `excerpt` first joins
a text's lines into one: a code fence or a list in a summary would otherwise break out
of its line, and a fence cut open would turn the rest of the message into code.
"""

from __future__ import annotations

import bisect
import re

from gateway.graphemes import is_boundary
from gateway.markdown_structure import Structure
from platforms.formatting import bare_urls

ELLIPSIS = "…"
TYPED_CHARS = 40
"""A word as the user typed it (an id, a backend name) is named back cut to this (`typed`): whole, a word
of thousands of characters came back as several messages, from a bot that answers everyone in a group."""
_LEAD = "x "
"""Parsed before the text: it shows after other words on its line, where a leading ``` or #
opens no block, so it must be read as inline Markdown, as the platform will."""
_WORD = re.compile(r"\S+")
_DIRECTION = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Unicode's direction controls (embeddings, overrides, isolates, their ends, the marks), which lay out the text
after them otherwise than written: a file name ``invoice\u202egpj.exe`` quoted back showed as ``invoiceexe.jpg``.
A line quoted or cut here shows its characters in the order they were written, without them (`shorten`, `literal`)."""
_INLINE_MARKUP = re.compile(
    r"\\(?=[!-/:-@\[-`{-~])|[`*\[]"  # an escape, code, emphasis, a link or an image
    r"|(?<![^\W_])_|_(?![^\W_])|~(?=~)|(?<=~)~"  # emphasis, never within snake_case; strikethrough, of two
    r"|&(?=#?\w+;)|<(?=[^\s<>]*>)"  # an entity; an autolink
    r"|:(?=//)"  # a scheme's, should what follows it be escaped (`literal`)
)
"""What Markdown reads as markup within a line, and no more: the terminal shows Markdown as written, and
``my_file.py``, ``~/src`` or ``Q&A`` would show there with backslashes."""


def shorten(line: str, limit: int) -> str:
    """``line`` (one line) without direction controls (`_DIRECTION`), as is when it then has at most ``limit``
    characters, else cut with "…" to at most ``limit``, between whole characters, outside links and markers, with the
    styles open at the cut closed."""
    line = _DIRECTION.sub("", line)
    if len(line) <= limit:
        return line
    structure = Structure(_LEAD + line, ())
    lead = len(_LEAD)
    cut = limit - 1
    while cut > 0:
        at = lead + cut
        if not is_boundary(line, cut) or structure.splits_marker(at) or line[cut - 1].isspace():
            cut -= 1  # a closing marker after a space closes nothing
            continue
        closers = "".join(style.closer for style in reversed(structure.styles_open_at(at)))
        if cut + len(closers) < limit:
            return line[:cut] + closers + ELLIPSIS
        cut -= 1
    return ELLIPSIS


def excerpt(text: str, limit: int) -> str:
    """``text``'s lines joined by single spaces, then `shorten`ed to ``limit``. Only its first words
    are read, four times ``limit`` in all: `shorten` parses all it is given, and ``/agents all`` cuts a
    summary of up to 24,000 characters for each of fifty children, seconds on the loop every chat
    shares. A style opened before the cut and closed past that is then shown as typed."""
    room, words = 4 * limit, []
    for match in _WORD.finditer(text):
        word = text[match.start():min(match.end(), match.start() + room + 1)]
        words.append(word)
        room -= len(word) + 1
        if room < 0:
            break
    return shorten(" ".join(words), limit)


def literal(text: str) -> str:
    """``text`` (one line) as Markdown that shows it as written: what a user wrote, quoted back by the
    gateway, read as Markdown showed ``_x_`` in italics, ``&amp;`` as ``&``, and ``[Verify](https://…)``
    as a link in the bot's own words. Escaped with backslashes, which `shorten` never cuts off; not
    inside a bare web address, which every renderer reads first, as written (backslashes and all). Nor right
    after an ``https://`` with no address after it (the backslash would make one): its colon is escaped instead.
    Without direction controls (`_DIRECTION`), which would show it otherwise than written."""
    text = _DIRECTION.sub("", text)
    urls, bare = [], set()
    for start, end, address in bare_urls.spans(text):
        if address:
            urls.append((start, end))
        elif (after := _INLINE_MARKUP.search(text, (colon := text.index(":", start)) + 1)) and after.start() <= end:
            bare.add(colon)
    starts = [start for start, _ in urls]
    ticked = False

    def escaped(markup: re.Match[str]) -> str:
        nonlocal ticked
        if markup.group() == ":":
            return "\\:" if markup.start() in bare else ":"
        at = bisect.bisect_right(starts, markup.start()) - 1
        if at >= 0 and markup.start() <= urls[at][1]:  # right after an address a backslash would join it
            ticked = ticked or markup.group() == "`"
            return markup.group()
        if ticked and markup.group() == "`":  # code takes no escapes: that one kept would end at this one
            return "&#96;"
        return "\\" + markup.group()

    return _INLINE_MARKUP.sub(escaped, text)


def typed(word: str) -> str:
    """``word`` quoted and `shorten`ed to `TYPED_CHARS`, to name it back in an answer, as written
    (`literal`). Only its start is read: `shorten` parses all it is given, about a second for each
    200,000 characters, and a word sent to a webhook may be a megabyte, parsed on the loop every chat shares."""
    return f"'{shorten(literal(word[:4 * TYPED_CHARS]), TYPED_CHARS)}'"


def at_word(text: str, limit: int) -> str:
    """``text``'s start of at most ``limit`` characters, cut at the last space or line break in their second half,
    so that no word is halved (a name, an id, a secret the log masks whole), else between whole characters;
    ``text`` as it is when it has at most ``limit``. Plain text, no Markdown closed: for a model to read."""
    if len(text) <= limit:
        return text
    cut = max(text.rfind(" ", limit // 2, limit + 1), text.rfind("\n", limit // 2, limit + 1))
    if cut < 0:
        cut = limit
        while cut > 0 and not is_boundary(text, cut):
            cut -= 1
    return text[:cut].rstrip()
