"""Splitting a Markdown message to a platform's length limit.

The outbox splits the agent's Markdown *before* an adapter renders it; each part
is rendered on its own when it is sent, so every part must be whole Markdown.
The limit is measured with the adapter's ``measure``, which counts what the
platform counts *after* rendering (Telegram: UTF-16 units of the text once the
HTML is parsed; Discord: characters of the rendered content; Slack: characters
of the mrkdwn), so a part that fits here fits there.

`split_text` cuts where a reader would: at a paragraph break, else a line break,
else a space, else between two characters as a reader sees them (never inside a
grapheme cluster — a flag, an emoji with a skin tone or zero-width joiners, a letter
and its combining marks: `gateway.graphemes` — nor between the two halves of a UTF-16
surrogate pair; only a cluster longer than a whole part is cut between its code
points). What a cut never breaks:

- **code fences** (``` or ~~~): a cut inside one closes the fence at the end of
  the part and reopens it, with the same info string (the language) and
  indentation, at the start of the next, so every part renders as code on its own
  (one in a nested list item, four spaces in or more, is reopened in the first
  column, and its lines up to its close are taken as far out; so are those of an
  indented fence a part starts at, the cut having dropped its indentation). One
  opened in a quote (``> ```py``) is closed and reopened in the quote, the fence
  line after the quote's ``>`` (and the rest of a code line cut in two after one
  too); one opened on a list item's marker line (``- ```py``), as far in as the
  item's text;
- **indented code** (four spaces in, at the top level): a part starting inside it starts
  at its line's indentation, and one cut inside a line is indented as code again, so the
  rest stays code rather than becoming a paragraph;
- **inline styles** (bold, italic, strikethrough, inline code): a style open at a
  cut is closed at the end of the part and reopened at the start of the next, and
  no cut falls inside a marker; unless the markers to close (or to reopen) would
  take more than a quarter of the limit (hundreds of styles open at once): then
  the part closes (or reopens) none, so every part keeps most of the limit for text;
- **links, bare URLs, images, escapes and entities**, which are kept whole;
- **tables**, cut only between body rows; the next part repeats the header rows;
- **list items**: a part starting inside one (past its marker) has none, so the item's
  later lines, indented to its text, are taken out as far as that text (`_Splitter.items_left`):
  left four spaces in or more, a paragraph of the item would be indented code, a nested
  item a line of the paragraph before it; and a blank line goes before the next item when
  it could not open a list right after that text (``2.``, which would be a line of it).
  Items in a quote are left as they are.
- **list numbers**: CommonMark numbers a list from its first item's number on, whatever
  the others' (``1.`` on every item, as models often write them, shows 1, 2, 3); so a part
  starting further down a numbered list writes its first item there with the number it is
  shown with (``4.``), its later lines moved in as far as the longer number needs
  (`_Splitter.rewritten`); every platform's renderer, and the web chat page, number on
  from it. A numbered list in an item left out that would run into that item's own list
  in the part (both taken out as far, same delimiter) gets the other delimiter (``1)``).
  A list in a quote keeps its numbers as written.

Whitespace at a cut is dropped (inside code, the indentation of the next line is
kept); so is a list item's lines', and a blank line may be added, and list markers
rewritten, as said; nothing else is added or removed.
Inline structure comes from markdown-it (`gateway.markdown_structure`), parsed only
when a text must be cut, and only the stretches where a cut is considered.

Cost: each part needs a handful of ``measure`` calls on text of about the part's
size (the search interpolates, so a measure proportional to the length converges
in two or three; Telegram's cap on formatted spans, which interpolation cannot
follow, about fifteen), so a 100 KB text splits in milliseconds with a cheap measure;
a rendering one renders only the block a candidate ends in, or a list's item, the
renderer remembering the others (`platforms.formatting.blocks`). Each candidate is
measured as the part would be written (out of the list items it starts in), so it
is read, and cut into runs, as sent.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

from markdown_it.token import Token

from gateway import link_references
from gateway.graphemes import is_boundary
from gateway.markdown_structure import Structure, Style
from platforms.base import Adapter
from platforms.formatting import markdown
from platforms.formatting.blank import is_blank

Measure = Callable[[str], int]

# CommonMark fences: up to three spaces of indent, three or more backticks (an info string without
# backticks) or tildes. A closing fence has at least as many of the same character and nothing else.
_FENCE_LINE = re.compile(r"^( {0,3})(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)
# A fence further in can only be one in a nested list item, which markdown-it tells from indented code.
_DEEP_FENCE_LINE = re.compile(r"^ {4,}(?:`{3,}|~{3,})", re.MULTILINE)
# A line that may open a fence after a quote's `>` or a list item's marker: markdown-it tells which do.
_CONTAINED_FENCE_LINE = re.compile(r"^ *(?:>|(?:[-+*]|\d{1,9}[.)]) ).*?(?:`{3}|~{3})", re.MULTILINE)
# What may stand before such a fence on its line: quote markers, list item markers, spaces.
_CONTAINER_PREFIX = re.compile(r"[ >]*(?:(?:[-+*]|\d{1,9}[.)]) +[ >]*)*")
_PREFIX_MARKER = re.compile(r"(?:[-+*]|\d{1,9}[.)])(?= )")
_LINE = re.compile(r"( *)(`{3,}|~{3,})([^\n]*)")
# A line indented as code (four columns in): only a part starting in one can start inside indented code.
_INDENTED_LINE = re.compile(r"^(?: {4}| {0,3}\t)[ \t]*\S", re.MULTILINE)
_CODE_INDENT = "    "
# A list item's marker, at most three columns past where its parent item's text starts.
_ITEM_MARKER = re.compile(r" {0,3}([-+*]|\d{1,9}[.)])(?=[ \t]|$)")
# A line indented as far as code: only then can losing its list item's indentation change what it is.
_DEEP_LINE = re.compile(r"\n {4}")
# A numbered list item's line: a part starting in its list may have to write it with another number.
_NUMBERED_LINE = re.compile(r"^ *\d{1,9}[.)](?:[ \t]|$)", re.MULTILINE)
_NEWLINE = re.compile("\n")
_SPACES = re.compile(" *")
_HALF = 2  # a structural cut is preferred only in the last 1/_HALF of the window; see choose_cut
_RETRIES = 6  # cuts tried when added closing markers push a part over the limit
_MARKER_SHARE = 4  # style markers closing or reopening styles at a cut take at most 1/_MARKER_SHARE of the limit
_REFERENCE_SHARE = 2  # the link definitions a part carries take at most 1/_REFERENCE_SHARE of it


@dataclass(frozen=True, slots=True)
class _Fence:
    open_start: int  # start of the opening line
    open_end: int  # end of the opening line (its newline, or len(text))
    close_start: int  # start of the closing line; len(text) when never closed
    close_end: int  # end of the closing line
    indent: str  # the opening line's; a fence in a list item is indented to the item's text
    ticks: str
    info: str
    closed: bool
    nested: bool = False
    """Four spaces in or more (in a nested list item): reopened in the first column (after its quote's
    markers, if in a quote), its lines up to its close taken as far out (see `_Splitter.assemble`),
    since so indented it would be indented code."""
    contained: bool = False
    """Opened after a quote's ``>`` or a list item's marker on its own line (``> ```py``, ``- ```py``):
    ``indent`` is what its later lines start with (the quote's markers, spaces for a marker), so a
    closing or reopened fence line stays in the quote, or as far in as the item's text."""

    # Both at the opening line's indentation: a closing fence in the first column would end the list
    # item holding the block instead, and itself open an empty block; a reopened one drops as many
    # spaces from each code line as it is indented, as the original did.
    def reopen(self) -> str:
        return f"{self.outermost if self.nested else self.indent}{self.ticks}{self.info}\n"

    @property
    def outermost(self) -> str:
        """Its ``indent`` without the leading spaces a nested one's lines are taken out by."""
        return self.indent.lstrip(" ")

    def close(self) -> str:
        return f"\n{self.indent}{self.ticks}"


@dataclass(frozen=True, slots=True)
class _Item:
    """A list item (not in a quote) as markdown-it reads it: its lines, where its marker is, and the
    column its text starts at, to which its later lines are indented."""

    first_line: int
    end_line: int  # exclusive
    marker: int  # the offset of its marker in the text
    marker_column: int
    content_column: int
    interrupts: bool = True
    """It opens a list right after a line of a paragraph: CommonMark lets only a bullet or a ``1.``
    holding text do that; any other number would be a line of the paragraph."""
    number: int | None = None
    """The number it is shown with, if numbered: its list's first number, counted on (``1.`` on
    every item, as models often write them, shows 1, 2, 3)."""
    width: int = 0
    """The characters of its marker (``10.``: three)."""
    spaces: int = 0
    """The spaces after its marker on its line; none when nothing follows it there."""
    list_id: int = -1
    """Which list it is in, counted in the order they start."""
    list_start: int = -1
    """The offset of the line its list starts on."""
    holder: int = -1
    """The marker offset of the item its list is in; -1 at the top level."""


_TOP = _Item(-1, -1, -1, 0, 0)
"""What holds a list at the top level: its items' markers start in the first four columns."""
_OTHER_DELIMITER = {".": ")", ")": "."}


@dataclass(frozen=True, slots=True)
class _Rewritten:
    """An item a part writes with another marker than the text does (`_Splitter.rewritten`)."""

    item: _Item
    end: int
    """The end of what `marker` stands for in the text: the marker, and the spaces after it if they change."""
    marker: str
    shift: int
    """The columns the item's later lines gain (lose, if negative), to stay as far in as its text: ``10.``
    for ``1.`` takes a column more, which no more than one space after the marker can give back."""
    interrupts: bool
    """As `_Item.interrupts`, with the number written here."""


def _rewritten(text: str, item: _Item, number: int | None, other_delimiter: bool) -> _Rewritten | None:
    """``item`` written with ``number`` (else its own), and the other delimiter (``1)`` for ``1.``) if
    ``other_delimiter``; None when that is how it is written."""
    written = text[item.marker:item.marker + item.width]
    digits = str(number) if number is not None else written[:-1]
    marker = digits + (_OTHER_DELIMITER[written[-1]] if other_delimiter else written[-1])
    if marker == written:
        return None
    interrupts = int(digits) == 1 and item.spaces > 0
    grown, marker_end = len(marker) - item.width, item.marker + item.width
    if not 1 <= item.spaces <= 4:
        # Its text starts a column past the marker (nothing follows it on its line, or indented code does).
        return _Rewritten(item, marker_end, marker, grown, interrupts)
    # The spaces after the marker give or take what it grows by, as far as they can (one to four).
    spaces = min(max(item.spaces - grown, 1), 4)
    return _Rewritten(item, marker_end + item.spaces, marker + " " * spaces, grown + spaces - item.spaces, interrupts)


@dataclass(slots=True)
class _OpenList:
    """A list `_list_items` is in."""

    start: int  # the offset of its first line
    number: int | None  # of its next item; None for bullets
    which: int  # counted in the order lists open
    holder: int  # the marker offset of the item it is in; -1 at the top level


def _list_items(text: str, starts: list[int], tokens: Callable[[], list[Token]]) -> list[_Item]:
    """The text's list items outside quotes, outermost first. An item whose columns cannot be told
    from its first line (a tab before its text, say) is left out, and so are the items in it."""
    if "\r" in text or "\0" in text:
        return []  # markdown-it rewrites them: its line numbers may not be this text's
    items: list[_Item] = []
    # Per open container, what holds the lists opened in it: an item, `_TOP`, or None (a quote, an
    # item left out, or anything in one of those).
    stack: list[_Item | None] = []
    lists: list[_OpenList] = []  # the lists open, innermost last
    opened = 0
    for tok in tokens():
        holder = stack[-1] if stack else _TOP
        if tok.nesting == -1:
            stack.pop()
            if tok.type in ("bullet_list_close", "ordered_list_close"):
                lists.pop()
        elif tok.type in ("bullet_list_open", "ordered_list_open"):
            stack.append(holder)
            number = int(tok.attrGet("start") or 1) if tok.type == "ordered_list_open" else None
            first = starts[tok.map[0]] if tok.map is not None else -1
            lists.append(_OpenList(first, number, opened, holder.marker if holder is not None else -1))
            opened += 1
        elif tok.type == "list_item_open":
            at = lists[-1]
            item = None if holder is None or tok.map is None else _item(text, starts, tok.map, tok.info, holder)
            if item is not None:
                item = replace(item, number=at.number, list_id=at.which, list_start=at.start, holder=at.holder)
                items.append(item)
            if at.number is not None:
                at.number += 1
            stack.append(item)
        elif tok.nesting == 1:
            stack.append(None)
    return items


def _item(text: str, starts: list[int], lines: list[int], number: str, parent: _Item) -> _Item | None:
    """The item on ``lines`` (markdown-it's map), ``number`` its number ("" for a bullet)."""
    first, end = lines
    line = text[starts[first]:starts[first + 1] - 1 if first + 1 < len(starts) else len(text)]
    m = _ITEM_MARKER.match(line, parent.content_column)
    if m is None or "\t" in line[:m.end() + 1]:
        return None
    rest = line[m.end():]
    spaces = len(rest) - len(rest.lstrip(" "))
    # As CommonMark reads it: the text starts a column past the marker when the marker ends its line
    # or five spaces follow it (indented code in the item), else where the spaces end.
    content = m.end() + (1 if not rest.strip() or spaces >= 5 else spaces)
    return _Item(first, end, starts[first] + m.start(1), m.start(1), content,
                 interrupts=number in ("", "1") and bool(rest.strip()), width=m.end() - m.start(1),
                 spaces=spaces if rest.strip() else 0)


def _scan_fences(text: str, tokens: Callable[[], list[Token]] | None = None) -> list[_Fence]:
    """The text's fences; ``tokens`` gives its block tokens (`markdown.block_tokens`), if asked."""
    deep = _DEEP_FENCE_LINE.search(text) or _CONTAINED_FENCE_LINE.search(text)
    block = _block_fences(text, tokens or (lambda: markdown.block_tokens(text))) if deep else []
    fences = _top_fences(text, block)
    if not block:
        return fences
    # A top-level fence line the block fences' lines pair with a later one: neither is a fence.
    starts = [f.open_start for f in block]
    ends = [f.close_end for f in block]

    def overlaps(f: _Fence) -> bool:
        i = bisect.bisect_left(ends, f.open_start + 1)  # the first block fence ending past f's start
        return i < len(block) and starts[i] < f.close_end

    return sorted([f for f in fences if not overlaps(f)] + block, key=lambda f: f.open_start)


def _block_fences(text: str, tokens: Callable[[], list[Token]]) -> list[_Fence]:
    """The closed fences the first-column scan (`_top_fences`) cannot see, as markdown-it reads them:
    those four spaces in or more (in a nested list item), and those opened after a quote's ``>`` or a
    list item's marker on their line. One left unclosed, or one whose lines could not be reopened
    as code (too far in within a quote), is left as text, as before."""
    if "\r" in text or "\0" in text:
        return []  # markdown-it rewrites them: its line numbers may not be this text's
    starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]

    def line_end(k: int) -> int:
        return starts[k + 1] - 1 if k + 1 < len(starts) else len(text)

    fences = []
    for tok in tokens():
        if tok.type != "fence" or tok.map is None or tok.content.count("\n") != tok.map[1] - tok.map[0] - 2:
            continue  # not closed by a fence line of its own (its container ended it, or the text did)
        first, last = tok.map[0], tok.map[1] - 1
        opening = _LINE.fullmatch(text, starts[first], line_end(first))
        if opening is not None:  # only spaces before it: in the first four columns, `_top_fences` finds it
            if len(opening.group(1)) >= 4:
                fences.append(_Fence(opening.start(), opening.end(), starts[last], line_end(last), opening.group(1),
                                     opening.group(2), opening.group(3).strip(), True, nested=True))
            continue
        fence = _contained_fence(text, tok.markup, starts[first], line_end(first), starts[last], line_end(last))
        if fence is not None:
            fences.append(fence)
    return fences


def _contained_fence(text: str, ticks: str, start: int, end: int, close_start: int, close_end: int) -> _Fence | None:
    """The fence opened on ``text[start:end]`` after a quote's or a list item's marker, closed by the
    line ``text[close_start:close_end]``; None when its lines could not be written again as a fence."""
    line = text[start:end]
    at = line.find(ticks)
    prefix = _CONTAINER_PREFIX.fullmatch(line, 0, at) if at > 0 else None
    if prefix is None or line.startswith(ticks[0], at + len(ticks)):
        return None
    # Its later lines start as its opening line does with each item marker as spaces: a closing or
    # reopened fence line must too, to stay in the quote (a fence never takes a line lazily) or item.
    indent = _PREFIX_MARKER.sub(lambda m: " " * len(m.group()), line[:at])
    info = line[at + len(ticks):].strip()
    if _reopens(indent, ticks):
        return _Fence(start, end, close_start, close_end, indent, ticks, info, True, contained=True)
    # Four columns in or more ("10. ```", or a quote in such an item): as a nested one, reopened in the
    # first column, its lines taken out as far; unless it is too far in within a quote as well.
    if not _reopens(indent.lstrip(" "), ticks):
        return None
    return _Fence(start, end, close_start, close_end, indent, ticks, info, True, nested=True, contained=True)


@lru_cache(maxsize=256)
def _reopens(indent: str, ticks: str) -> bool:
    """``indent`` before a fence's lines still makes them a fence holding those lines' code."""
    tokens = markdown.block_tokens(f"{indent}{ticks}\n{indent}x\n{indent}{ticks}\n")
    return [(t.type, t.content) for t in tokens if t.type in ("fence", "code_block")] == [("fence", "x\n")]


def _indented_code(text: str, tokens: Callable[[], list[Token]]) -> list[tuple[int, int]]:
    """The top-level indented code blocks, from the start of their first line to the end of their last."""
    if "\r" in text or "\0" in text:
        return []  # markdown-it rewrites \r and \0: its line numbers may not be this text's
    starts = [0, *(m.end() for m in re.finditer("\n", text))]
    return [(starts[tok.map[0]], starts[tok.map[1]] - 1 if tok.map[1] < len(starts) else len(text))
            for tok in tokens() if tok.type == "code_block" and tok.level == 0 and tok.map]


def _top_fences(text: str, block: list[_Fence]) -> list[_Fence]:
    """The fences opened in the first four columns, but for the lines of ``block`` fences (a closing
    ``  ```` of one opened on a list item's marker line would open a fence here)."""
    fences: list[_Fence] = []
    current: re.Match[str] | None = None
    block_starts = [f.open_start for f in block]
    for m in _FENCE_LINE.finditer(text):
        i = bisect.bisect_right(block_starts, m.start()) - 1
        if i >= 0 and m.start() < block[i].close_end:
            continue
        ticks, rest = m.group(2), m.group(3)
        if current is None:
            if ticks[0] == "`" and "`" in rest:
                continue  # not a fence: a backtick fence's info string has no backticks
            current = m
        elif ticks[0] == current.group(2)[0] and len(ticks) >= len(current.group(2)) and not rest.strip():
            fences.append(_Fence(current.start(), current.end(), m.start(), m.end(), current.group(1),
                                 current.group(2), current.group(3).strip(), True))
            current = None
    if current is not None:
        n = len(text)
        fences.append(_Fence(current.start(), current.end(), n, n, current.group(1), current.group(2),
                             current.group(3).strip(), False))
    return fences


def _outdented(lines: str, spaces: int) -> str:
    return re.sub(rf"^ {{1,{spaces}}}", "", lines, flags=re.MULTILINE)


def _is_pair(text: str, i: int) -> bool:
    """A high surrogate at i-1 and a low one at i: a cut at i would break one character."""
    return 0 < i < len(text) and "\ud800" <= text[i - 1] <= "\udbff" and "\udc00" <= text[i] <= "\udfff"


def _whole(text: str, i: int) -> bool:
    """A cut at i splits no character a reader sees: no surrogate pair, no grapheme cluster."""
    return not _is_pair(text, i) and is_boundary(text, i)


def _character_start(text: str, start: int, end: int) -> int:
    """The last cut after ``start`` and at or before ``end`` that splits no cluster; when one
    cluster fills the whole stretch (a letter under a pile of marks), ``end`` between code points."""
    for p in range(end, start, -1):
        if _whole(text, p):
            return p
    return end - 1 if _is_pair(text, end) else end


class _Splitter:
    def __init__(self, text: str, limit: int, measure: Measure):
        self.text, self.limit, self.measure = text, limit, measure
        self._tokens: list[Token] | None = None
        self.fences = _scan_fences(text, self.block_tokens)
        self._starts = [f.open_start for f in self.fences]
        self.content_end = self.rstrip(0, len(text))
        self._close_starts = [f.close_start for f in self.fences]
        # _longest[i]: the longest closing fence among fences[i:], to reserve room for one.
        self._longest = [""] * (len(self.fences) + 1)
        for i in range(len(self.fences) - 1, -1, -1):
            self._longest[i] = max(self._longest[i + 1], self.fences[i].close(), key=len)
        self._structure: Structure | None = None
        self._indented: list[tuple[int, int]] | None = None
        self._indented_starts: list[int] = []
        self._items: list[_Item] | None = None
        self._item_markers: list[int] = []
        self._item_at: dict[int, _Item] = {}
        self._item_lines: dict[int, _Item] | None = None
        self._line_starts: list[int] = []

    def block_tokens(self) -> list[Token]:
        """The text's block tokens (`markdown.block_tokens`), parsed once for the scans that need them."""
        if self._tokens is None:
            self._tokens = markdown.block_tokens(self.text)
        return self._tokens

    @property
    def structure(self) -> Structure:
        if self._structure is None:
            self._structure = Structure(self.text, [(f.open_start, f.close_end) for f in self.fences])
        return self._structure

    # -- fences --------------------------------------------------------------------------

    def fence_before(self, pos: int) -> _Fence | None:
        """The last fence opening before ``pos`` (fences never overlap)."""
        i = bisect.bisect_left(self._starts, pos) - 1
        return self.fences[i] if i >= 0 else None

    def inside(self, pos: int) -> _Fence | None:
        """The fence whose body holds ``pos`` (a part starting here must reopen it)."""
        f = self.fence_before(pos)
        return f if f is not None and f.open_end < pos < f.close_start else None

    def in_code(self, pos: int) -> bool:
        """``pos`` lies within a fence, its marker lines included."""
        f = self.fence_before(pos + 1)
        return f is not None and f.open_start <= pos < f.close_end

    def open_at_end(self, end: int) -> _Fence | None:
        """The fence a part ending at ``end`` leaves open (so it must close it)."""
        f = self.fence_before(end)
        if f is None or not f.open_start < end <= f.close_start:
            return None
        if end >= self.content_end and not f.closed:
            return None  # the original never closed it either; the last part mirrors it
        return f

    def reserve(self, start: int) -> str:
        """Room for a closing fence, while any fence may still be open in a part from ``start``."""
        return self._longest[bisect.bisect_left(self._close_starts, start)]

    def indented_code_at(self, pos: int) -> tuple[int, int] | None:
        """The top-level indented code block whose lines hold ``pos`` (indentation included)."""
        if not _INDENTED_LINE.match(self.text, self.text.rfind("\n", 0, pos) + 1):
            return None
        if self._indented is None:  # parsed only for a text cut in an indented line
            self._indented = _indented_code(self.text, self.block_tokens)
            self._indented_starts = [start for start, _ in self._indented]
        blocks, i = self._indented, bisect.bisect_right(self._indented_starts, pos) - 1
        return blocks[i] if i >= 0 and pos <= blocks[i][1] else None

    # -- what a part starting or ending somewhere needs --------------------------------------

    def head(self, start: int) -> str:
        """What a part starting at ``start`` repeats: a fence's opening line, a table's header
        rows, or the markers of the styles open there."""
        if start == 0:
            return ""
        fence = self.inside(start)
        if fence is not None:
            if fence.contained and ">" in fence.indent and self.text[start - 1] != "\n":
                # Cut inside a line of a quote's code: the rest of the line is code only in the quote.
                return fence.reopen() + (fence.outermost if fence.nested else fence.indent)
            return fence.reopen()
        if self.in_code(start):
            return ""
        if self.indented_code_at(start) is not None and self.text[start - 1] != "\n":
            # Cut inside a line of indented code: the rest of it is code only indented as code.
            return _CODE_INDENT
        table = self.structure.table_at(start)
        if table is not None and start >= table.head_end:
            return self.text[table.start:table.head_end]
        return self._carried("".join(s.opener for s in self.structure.styles_open_at(start) if start < s.close_start))

    def _carried(self, markers: str) -> str:
        """``markers`` if they leave the part most of the limit, else nothing: a thousand styles open at
        once (``"*" * 4000``) would leave each part a few characters, and a reply thousands of parts."""
        return markers if len(markers) <= self.limit // _MARKER_SHARE else ""

    def styles_left_open(self, end: int) -> list[Style]:
        """The styles a part ending at ``end`` must close, outermost first."""
        return [s for s in self.structure.styles_open_at(end) if s.open_end < end]

    # -- choosing the cut ------------------------------------------------------------------

    def rstrip(self, start: int, end: int) -> int:
        while end > start and self.text[end - 1].isspace():
            end -= 1
        return end

    def valid_end(self, start: int, end: int) -> bool:
        """An end that is not inside a fence line, nor just after an opening line (an empty block),
        nor inside a style marker, a link or a table row, nor just after a style opened."""
        if end <= start:
            return False
        f = self.fence_before(end)
        if f is not None and (f.open_start < end <= f.open_end or f.close_start < end < f.close_end):
            return False
        if f is not None and f.open_start < end <= f.close_end:
            # Code: no inline structure to respect; but in a quote, not between a line's ">" and its code.
            return not (f.contained and ">" in f.indent and self.in_prefix(end))
        return not self.structure.splits_marker(end)

    def in_prefix(self, end: int) -> bool:
        """``end`` falls between a line's start and its text, the line going on after it."""
        text, line = self.text, self.text.rfind("\n", 0, end) + 1
        line_end = text.find("\n", end)
        return not text[line:end].strip(" >") and bool(text[end:line_end if line_end != -1 else len(text)].strip())

    def fits(self, head: str, start: int, end: int, tail: str) -> bool:
        return self.measure(head + self.text[start:end] + tail) <= self.limit

    def max_end(self, head: str, start: int, tail: str) -> int:
        """Largest end with head + text[start:end] + tail within the limit; ``start`` if none.

        A safeguarded interpolation search: each guess follows from how the measure has grown
        so far (exact in one or two steps for a measure proportional to the length); without an
        upper bound yet it doubles once interpolation keeps falling short, and within a bracket
        it bisects whenever a guess did not halve it, and only bisects once two interpolated guesses
        landed next to a bound: a measure that leaps (Telegram's, past 100 spans, is the limit and
        one) draws each one there, a measure wasted for every halving."""
        n, limit = len(self.text), self.limit
        base = self.measure(head + tail) if head or tail else 0
        lo, lo_m, hi, hi_m = start, base, -1, 0
        guess = min(n, start + max(limit - base, 1))
        unbounded_steps, last_width, misses, interpolated = 0, -1, 0, False
        # Each candidate as the part would have it: out of the list items it starts in (`assemble`);
        # measured as written, a part starting in a list item was read otherwise, and rendered whole.
        as_is = start == 0 or self.inside(start) is not None or self.outside_its_item(start, head) is not None
        while True:
            m = self.measure(head + (self.text[start:guess] if as_is else self.body(start, guess)) + tail)
            if m <= limit:
                lo, lo_m = guess, m
                if guess == n:
                    return n
            else:
                hi, hi_m = guess, m
            if hi == -1:
                unbounded_steps += 1
                grown = lo - start
                step = (limit - lo_m) * grown // max(lo_m - base, 1)
                if unbounded_steps > 2:
                    step = max(step, grown)
                guess = min(n, lo + max(step, 1))
                continue
            width = hi - lo
            if width <= 1:
                return lo
            halved = last_width == -1 or width * 2 <= last_width
            misses += interpolated and width + 1 >= last_width  # it moved a bound by one: drawn next to it
            interpolated = halved and misses < 2
            if not interpolated:
                guess = (lo + hi) // 2
            else:
                step = (limit - lo_m) * width // max(hi_m - lo_m, 1)
                guess = min(hi - 1, max(lo + 1, lo + step))
            last_width = width

    def choose_cut(self, start: int, end: int) -> int:
        """Where to end the part that may run up to ``end``.

        Paragraph, line, then space breaks in the later half of the window first, so parts stay
        full rather than ending at an early blank line; then the same anywhere; then a hard cut.
        """
        text = self.text
        half = start + (end - start) // _HALF
        for lo in (half, start + 1):
            for sep in ("\n\n", "\n", " "):
                p = text.rfind(sep, lo, end)
                while p != -1:
                    body_end = self.rstrip(start, p)
                    if self.valid_end(start, body_end):
                        return p
                    # Every break between body_end and p ends the part at body_end too: skip them,
                    # so a long run of whitespace is walked once, not once per break in it.
                    p = text.rfind(sep, lo, body_end)
        cut = _character_start(text, start, end)
        body_end = self.rstrip(start, cut)
        if not self.valid_end(start, body_end):
            # Rather than cut a fence line, a marker or a link, or end on an empty block, move it on.
            f = self.fence_before(body_end)
            if f is not None and f.close_start < body_end < f.close_end and f.close_start > start:
                cut = f.close_start
            elif f is not None and f.open_start < body_end <= f.open_end and f.open_start > start:
                cut = f.open_start
            elif not self.in_code(body_end - 1):
                cut = self._before_marker(start, body_end, cut)
        return cut

    def _before_marker(self, start: int, end: int, cut: int) -> int:
        """The last position before ``end`` that is a valid end, else ``cut`` itself."""
        atom = self.structure.atom_at(end)
        if atom is not None and atom[0] > start:
            return atom[0]
        for p in range(end - 1, max(start, end - 16), -1):
            if self.valid_end(start, p) and _whole(self.text, p):
                return p
        return cut

    def assemble(self, head: str, start: int, cut: int, *, markers: bool = True) -> tuple[str, _Fence | None,
                                                                                        list[Style]]:
        """The part from ``start`` to ``cut``: its head, its text, and what closes what it leaves
        open (nothing without ``markers``, when the limit cannot hold them)."""
        body_end = self.rstrip(start, cut)
        fence = self.open_at_end(body_end) if markers and (head or self.reserve(start)) else None
        closes = markers and fence is None and cut < len(self.text) and not self.in_code(body_end - 1)
        styles = self.styles_left_open(body_end) if closes else []
        if not self._carried("".join(st.closer for st in styles)):
            styles = []
        tail = fence.close() if fence is not None else "".join(s.closer for s in reversed(styles))
        outside = self.outside_its_item(start, head)
        # The lines up to `placed` stand as they are (a fence the part starts in, reopened at its own
        # indentation) or are taken out with a fence opened in the first column; the rest, out of
        # the list items the part leaves out (`items_left`).
        placed = start
        if outside is not None:
            placed = max(start, min(body_end, outside.close_end))
            if fence is outside:
                tail = f"\n{outside.outermost}{outside.ticks}"
        elif (reopened := self.inside(start)) is not None:
            placed = max(start, min(body_end, reopened.close_end))
        body = self.text[start:placed]
        if outside is not None:
            # Opened in the first column, outside the list item: its code lines and close go there too.
            body = _outdented(body, len(outside.indent) - len(outside.outermost))
        items = self.items_left(start, placed, body_end) if placed < body_end else []
        numbers = self.rewritten(start, placed, body_end, items) if placed < body_end else {}
        if items or numbers:
            body += self.out_of_items(items, numbers, placed, body_end)
        else:
            body += self.text[placed:body_end]
        if (items or numbers) and fence is not None and fence is not outside and fence.open_end >= placed:
            # Its lines were taken out (or in) as far: so goes its close.
            columns = self.taken_out(items, fence.open_end + 1, numbers)
            indent = fence.indent[columns:] if columns >= 0 else " " * -columns + fence.indent
            tail = f"\n{indent}{fence.ticks}"
        return head + body + tail, fence, styles

    def body(self, start: int, end: int) -> str:
        """``text[start:end]`` as a part from ``start`` has it when it starts in no code block: out of
        the list items it starts in, its items' markers rewritten (`out_of_items`)."""
        items = self.items_left(start, start, end)
        numbers = self.rewritten(start, start, end, items)
        return self.out_of_items(items, numbers, start, end) if items or numbers else self.text[start:end]

    def items_left(self, start: int, since: int, end: int) -> list[tuple[_Item, int]]:
        """The list items around ``start`` whose marker a part from there leaves out (or, for one it
        starts at, its marker's indentation), outermost first, each with the columns its lines lose
        in the part: those up to its text (or its marker), so that they stand to the part as they
        stood to the item. None where that cannot matter: no line from ``since`` to ``end`` is a
        numbered item's (which could not open a list right after the text of one left out), nor but
        code lines of a fence (indented as the fence is; not one opened on an item's marker line, as far
        in as the item's text, which a part starting at that marker takes out with the item) is
        indented as far as code."""
        if not self.maybe_in_list(start) or (not self.numbered_line(since, end) and all(
                (f := self.inside(m.end() - 4)) is not None and not f.contained
                for m in _DEEP_LINE.finditer(self.text, since, end))):
            return []
        items = self.list_items()
        line = bisect.bisect_right(self._line_starts, start) - 1
        # The innermost item holding the line (those after it ending before the line are in it), then its holders.
        i = bisect.bisect_right(self._item_markers, start) - 1
        while i >= 0 and items[i].end_line <= line:
            i -= 1
        around = []
        item = items[i] if i >= 0 else None
        while item is not None:
            around.append((item, item.marker_column if item.marker == start else item.content_column))
            item = self._item_at.get(item.holder)
        return around[::-1]

    def maybe_in_list(self, start: int) -> bool:
        """A part from ``start`` may be in a list, whose lines to take out or whose numbers to go on
        with: only then are the text's lists parsed. Not on a line in the first column that follows a
        blank line and holds no item's marker (no list goes on there), nor at a bullet's marker in the
        first column (its list's items keep their columns in the part, and bullets have no number)."""
        text, line = self.text, self.text.rfind("\n", 0, start) + 1
        if start == 0 or (start == line and text[start] in "-+*" and _ITEM_MARKER.match(text, start)):
            return False
        if text[line] in " \t" or _ITEM_MARKER.match(text, line):
            return True
        return line > 0 and not text[text.rfind("\n", 0, line - 1) + 1:line].isspace()

    def numbered_line(self, since: int, end: int) -> bool:
        """A numbered item's marker may be on a line from the one holding ``since`` to ``end``."""
        return _NUMBERED_LINE.search(self.text, self.text.rfind("\n", 0, since) + 1, end) is not None

    def list_items(self) -> list[_Item]:
        if self._items is None:  # parsed only for a text cut in a list
            self._line_starts = [0, *(m.end() for m in _NEWLINE.finditer(self.text))]
            self._items = _list_items(self.text, self._line_starts, self.block_tokens)
            self._item_markers = [item.marker for item in self._items]
            self._item_at = {item.marker: item for item in self._items}
        return self._items

    def rewritten(self, start: int, since: int, end: int, items: list[tuple[_Item, int]]) -> dict[int, _Rewritten]:
        """By line, the numbered items from ``since`` to ``end`` a part from ``start`` writes with another
        marker: the first of each list that began before ``start`` with the number it is shown with
        (a list written ``1.`` on every item would start at 1 again), and those of a list in an item
        of ``items`` left out with the other delimiter when that item's list has theirs (both taken
        out as far, they would be one list, the later items of the outer one numbered on from the
        inner one's)."""
        if not self.maybe_in_list(start) or not self.numbered_line(since, end):
            return {}
        text, listed = self.text, self.list_items()
        lost = {item.marker: item for item, columns in items if columns == item.content_column}
        out: dict[int, _Rewritten] = {}
        seen: set[int] = set()
        for item in listed[bisect.bisect_left(self._item_markers, since):bisect.bisect_left(self._item_markers, end)]:
            if item.number is None:
                continue
            first = item.list_id not in seen
            seen.add(item.list_id)
            holder = lost.get(item.holder)
            other = holder is not None and holder.number is not None and \
                text[holder.marker + holder.width - 1] == text[item.marker + item.width - 1]
            number = item.number if first and item.list_start < start else None
            if (rewritten := _rewritten(text, item, number, other)) is not None:
                out[item.first_line] = rewritten
        return out

    def taken_out(self, items: list[tuple[_Item, int]], pos: int, numbers: dict[int, _Rewritten]) -> int:
        """The columns the line holding ``pos`` loses (gains, if negative): those of the innermost of
        ``items`` it is in, less those a rewritten item it is a later line of gains."""
        line = bisect.bisect_right(self._line_starts, pos) - 1
        lost = next((columns for item, columns in reversed(items) if line < item.end_line), 0)
        return lost - next((r.shift for r in numbers.values() if r.item.first_line < line < r.item.end_line), 0)

    def out_of_items(self, items: list[tuple[_Item, int]], numbers: dict[int, _Rewritten], start: int,
                     end: int) -> str:
        """``text[start:end]``, each line that starts in it taken out of ``items`` (`items_left`), and
        ``numbers``' items written with their markers, their later lines as far in as their text; and a
        blank line before an item of theirs that could not open a list right after the text of one
        left out (``2.`` after a line of a paragraph would be a line of it, and the item's own later
        lines, taken out, code)."""
        text, out, last = self.text, [], start
        lost = [item for item, columns in items if columns == item.content_column]  # not one it starts at
        if self._item_lines is None:
            self._item_lines = {}
            for item in reversed(self._items or ()):  # the outermost of those sharing a line wins
                self._item_lines[item.first_line] = item
        number = bisect.bisect_right(self._line_starts, start) - 1
        while True:
            newline = text.find("\n", last, end)
            stop = end if newline == -1 else newline + 1
            rewritten = numbers.get(number)
            if rewritten is not None and last <= rewritten.item.marker and rewritten.end <= stop:
                out += (text[last:rewritten.item.marker], rewritten.marker, text[rewritten.end:stop])
            else:
                out.append(text[last:stop])
            if newline == -1:
                return "".join(out)
            line, number = stop, number + 1
            spaces = _SPACES.match(text, line, end).end() - line  # type: ignore[union-attr]
            columns = self.taken_out(items, line, numbers)
            last = line + min(spaces, max(columns, 0))
            item = self._item_lines.get(number)
            if item is not None and any(i.end_line == number for i in lost):
                rewritten = numbers.get(number)
                interrupts = rewritten.interrupts if rewritten is not None and rewritten.item is item else \
                    item.interrupts
                previous = self._line_starts[number - 1]
                if not interrupts and not text[previous:line].isspace() and not self.in_code(previous):
                    out.append("\n")  # right after a line of text (not a fence's)
            if columns < 0 and text[line:end if (eol := text.find("\n", line, end)) == -1 else eol].strip():
                out.append(" " * -columns)

    def outside_its_item(self, start: int, head: str) -> _Fence | None:
        """The fence a part from ``start`` opens in the first column: a nested one reopened by ``head``,
        or any indented one starting the part (its indentation dropped as whitespace at the cut)."""
        f = self.fence_before(start + 1)
        if f is None or not f.indent:
            return None
        if head and f.nested and f.open_end < start < f.close_start:
            return f
        if f.contained:
            return None  # a part starting at its opening line starts with its quote or item as well
        # Any indented fence a part starts at: the cut dropped its indentation, and with it what told
        # how many spaces its code lines drop (a list item's three would be the user's code).
        return f if f.open_start <= start <= f.open_start + len(f.indent) else None

    def next_start(self, start: int, cut: int, left_open: _Fence | None, closed: list[Style]) -> int:
        """Where the part after the one from ``start`` to ``cut`` starts: past the whitespace at the cut
        (inside code keeping the next line's indentation) and any closing fence or marker the part
        already got."""
        text, n = self.text, len(self.text)
        j = cut
        while j < n and text[j].isspace():
            j += 1
        if left_open is not None and left_open.close_start <= j <= left_open.close_end and left_open.closed:
            # The part already got a closing fence; the original's would only open an empty block.
            return self.next_start(start, left_open.close_end, None, [])
        for style in reversed(closed):
            if j == style.close_start:
                j = style.close_end
        if (code := self.inside(j)) is not None:
            # At its line's code (the cut before the line or in its indentation): keep the indentation.
            line = text.rfind("\n", 0, j) + 1
            if line > start and not text[line:j].strip(" \t>" if code.contained else " \t"):
                return line
        if j < n and self.indented_code_at(j) is not None:
            # Indented code is code by its indentation: a part starting without it would be a paragraph.
            line = text.rfind("\n", 0, j) + 1
            if line >= cut:
                return line
        return j

    def next_part(self, start: int) -> tuple[str | None, int]:
        """The part starting at ``start`` (None when it would hold only whitespace and markers) and
        where the one after it starts."""
        text, n = self.text, len(self.text)
        head = self.head(start)
        tail = self.reserve(start)
        end = self.max_end(head, start, tail)
        # The rest may fit once no closing fence needs room: the last part. Checked only when the
        # rest is about the window's size, so the text is not measured whole again for every part.
        if end < n and self.content_end - max(end, start) <= len(tail) and self.fits(head, start, self.content_end, ""):
            end = n
        markers = True
        if end < n and (end <= start or (end == start + 1 and _is_pair(text, end))):
            head, markers = "", False  # the limit cannot hold the markers: plain text it is
            end = self.max_end("", start, "")
            if end <= start or (end == start + 1 and _is_pair(text, end)):
                raise ValueError(f"limit {self.limit} cannot hold the character at {start}")
        if end >= n:
            part = self.assemble(head, start, n, markers=markers)[0]
            if self.measure(part) <= self.limit:
                return self._kept(part, start, n), n
            # Measured with room for a closing fence it does not get, the rest was read otherwise (a fence
            # there makes what follows code, link definitions too): cut it as any other part.
            end = n - 1
        cut = self.choose_cut(start, end)
        for _ in range(_RETRIES):
            if cut <= start or (cut == start + 1 and _is_pair(text, cut)):
                break  # no room left for the markers
            part, fence, styles = self.assemble(head, start, cut, markers=markers)
            over = self.measure(part) - self.limit
            if over <= 0:
                return self._kept(part, start, cut), self.next_start(start, cut, fence, styles)
            # Closing markers (or a measure that is not monotone) pushed it over: cut earlier.
            end = max(start + 1, min(end, cut) - over)
            cut = self.choose_cut(start, end)
        # Give up on structure for this part: plain text, as much as fits, at least one character.
        end = self.max_end("", start, "")
        end = _character_start(text, start, end)
        end = end if end > start else start + (2 if _is_pair(text, start + 1) else 1)
        return self._kept(text[start:end], start, end), end

    def _kept(self, part: str, start: int, end: int) -> str | None:
        return None if is_blank(self.text[start:end]) else part


def split_text(text: str, limit: int, measure: Measure = len) -> list[str]:
    """Cut the Markdown ``text`` into parts with ``measure(part) <= limit``, in order.

    Blank text (empty, or only whitespace and invisible characters: `platforms.formatting.blank`)
    gives ``[]``; text that fits is returned whole and unchanged. Blank parts are dropped. Joined, the parts give back the text
    except for the whitespace at the cuts (an indented code line cut in two is indented again) and
    in the list items a part starts in, the markers added to close and reopen code blocks, styles
    and tables, and the list markers rewritten to go on with a list's numbers (see the module
    docstring); a text with link reference definitions has those a part uses at its end (up to half
    the limit), and no part of definitions only (`gateway.link_references`). Raises ValueError when
    ``limit`` cannot hold even one character; a limit too small for a part's markers
    plus a character splits that stretch without them.
    """
    if limit < 1:
        raise ValueError(f"limit must be positive, got {limit}")
    if is_blank(text):
        return []
    if measure(text) <= limit:
        return [text]
    references = link_references.References(text, limit // _REFERENCE_SHARE)
    splitter = _Splitter(text, limit, (lambda part: measure(part + references.for_part(part))) if references else measure)
    parts: list[str] = []
    start, n = 0, len(text)
    while start < n:
        part, start = splitter.next_part(start)
        if part is not None:
            parts.append(part)
    if references:
        # Not after a fence the original leaves open: there they would be code, shown as written.
        return [p if _leaves_code_open(p) else p + references.for_part(p)
                for p in parts if not link_references.shows_nothing(p)]
    return parts


def safe_measure(adapter: Adapter) -> Callable[[str], int]:
    """The adapter's measure, also for text holding lone surrogates (which a UTF-16 encoder
    refuses): each lone surrogate is then measured as one replacement character."""
    measure = adapter.measure

    def measured(text: str) -> int:
        try:
            return measure(text)
        except UnicodeError:
            return measure(text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace"))

    return measured


def _leaves_code_open(part: str) -> bool:
    fences = _scan_fences(part)
    return bool(fences) and not fences[-1].closed
