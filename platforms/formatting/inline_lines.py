"""Parsing a block's inline content a few lines at a time, so that each piece's rendering is remembered.

The splitter measures many candidate parts of one reply, each ending a little further on;
`blocks.runs` lets a renderer remember every run of blocks but the last, and cannot cut
inside a block, so a long paragraph (or list, or quote) was parsed and rendered whole for
every candidate, its inline content above all. `pieces` cuts a block's inline content into
pieces of whole lines, each parsed alone (`Piece.tokens`): the pieces' tokens, joined by a
soft line break, are those markdown-it makes of the whole, so a renderer renders a piece at
a time and remembers each (`markdown.Renderer`): a candidate then costs the lines it ends in.

A piece is cut off before a line when the text before leaves nothing open that the text
after could go on with or close (`_closed`). markdown-it then reads that piece alone as in
the whole, and the whole as the pieces' tokens joined by a soft line break (what it makes of
the line break between them, the next line's leading spaces and tabs skipped):

- a rule reading forward (a code span's backticks, a link's label, address and title) stops
  at what ends the construct, which, when it lies within the piece alone, it finds there
  with more text after it too; one that found no end left its opening as text (a ``[``,
  backticks), or a link read as a reference, which the text after could make an inline one
  (its ``(`` shows right after the link);
- an emphasis or strikethrough closer pairs with the nearest opener before it still open
  (markdown-it's ``balance_pairs``): the piece's own pairs are made before any closer after it is
  read, and with none of its openers left, shown as text (``*``, ``~~``, an ``_`` that is not
  within a word), a closer after it pairs within what follows, as alone;
- a line break after a space drops it (two make a hard break), and one after a backslash is a
  hard break: a piece ending in either is not cut there.

Text in an address written as itself (a bare URL, an autolink) is its own. What is left open
may be text only (an ``*`` between numbers, a ``[1]`` with no definition): the piece then takes
twice as many lines, up to the last, so content with nowhere to cut is parsed twice at most.
A piece's tokens are not remembered for long, only whether it is closed (and its rendering, by
the renderer): thousands of them, kept, took more of the garbage collector's time than their parsing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.common.utils import normalizeReference
from markdown_it.token import Token

from platforms.formatting import bare_urls

References = dict[str, dict[str, str]]
Used = tuple[tuple[str, str, str], ...]
_SHORTEST = 256
"""Characters a piece holds at least (but its last line): a parse of each line alone took longer than one of
them all, for plain text."""
_ADDRESSES = ("autolink", bare_urls.MARKUP)
# What an opening left unclosed shows as: a link's bracket, backticks, emphasis or strikethrough
# markers; an ``_`` within a word (a letter or digit on each side) can neither open nor close.
_LEFT_OPEN = re.compile(r"[*`\[]|~~|(?<![^\W_])_|_(?![^\W_])")
# A bracketed text holding no unescaped bracket: every link label is one (CommonMark allows no
# unescaped bracket in a label).
_BRACKETED = re.compile(r"\[((?:[^\[\]\\]|\\.){1,999})\]", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Piece:
    """Lines of an inline content, parsed alone by ``md``, their links reading ``references``."""

    md: MarkdownIt
    text: str
    references: Used

    @property
    def tokens(self) -> tuple[Token, ...]:
        return _parsed(self)

    @property
    def closed(self) -> bool:
        """It leaves nothing open that a line after it could go on with or close."""
        return _closed(self)


def pieces(md: MarkdownIt, content: str, references: References) -> Iterator[Piece]:
    """``content`` (an inline token's) cut into pieces, in order: its tokens are the pieces', each piece's
    after a soft line break, its links reading ``references`` (see the module docstring). Each is made
    once the one before is used: a piece's tokens are remembered only until then."""
    lines = content.split("\n")
    first, n = 0, len(lines)
    while True:
        end = first + 1
        while True:
            text = "\n".join(lines[first:end])
            if end < n and len(text) < _SHORTEST:
                end += 1
                continue
            piece = Piece(md, text, _used(text, references))
            if end == n:
                yield piece
                return
            if piece.closed and lines[end].lstrip(" \t"):
                break
            end = min(n, 2 * end - first)
        yield piece
        lines[end] = lines[end].lstrip(" \t")  # markdown-it skips them after a line break
        first = end


@lru_cache(maxsize=1024)
def labels(text: str) -> frozenset[str]:
    """What every bracketed text of ``text`` would be as a link label: the labels its links may use."""
    return frozenset(normalizeReference(m.group(1)) for m in _BRACKETED.finditer(text))


def _used(piece: str, references: References) -> Used:
    """The ``references`` a link in ``piece`` may use: a piece is remembered for those only."""
    if not references or "[" not in piece:
        return ()
    used = labels(piece)
    return tuple((label, ref["href"], ref.get("title") or "") for label, ref in references.items() if label in used)


@lru_cache(maxsize=16)  # from `Piece.closed` to its use
def _parsed(piece: Piece) -> tuple[Token, ...]:
    env = {"references": {label: {"href": href, "title": title} for label, href, title in piece.references}}
    return tuple(piece.md.parseInline(piece.text, env)[0].children or ())


@lru_cache(maxsize=2048)
def _closed(piece: Piece) -> bool:
    text = piece.text
    if not text or text[-1].isspace() or text[-1] == "\\":
        return False
    # An entity's character (``&#97;``) may stand next to an ``_`` in the text where the source has the ``;``.
    entities = "&" in text
    if any(_LEFT_OPEN.search(shown) or (entities and "_" in shown) for shown in _texts(piece.tokens)):
        return False
    # A link (or image) read as a reference when its "(" found no ")": more text may make it an inline one.
    return not any(a.type in ("link_close", "image") and b.type == "text" and b.content.startswith("(")
                   for a, b in zip(piece.tokens, piece.tokens[1:]))


def _texts(tokens: Sequence[Token]) -> Iterator[str]:
    """The text of ``tokens`` (an image's alt text's too), but that of an address written as itself."""
    address = False
    for tok in tokens:
        if tok.type == "link_open":
            address = tok.markup in _ADDRESSES
        elif tok.type == "link_close":
            address = False
        elif tok.type == "text" and not address:
            yield tok.content
        elif tok.children:
            yield from _texts(tok.children)
