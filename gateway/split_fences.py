"""Where the code blocks of a Markdown text are, for `gateway.splitting` to cut around them.

A cut inside a fenced code block (``` or ~~~) closes the fence at the end of the part and reopens it,
with the same info string (the language) and indentation, at the start of the next, so every part
renders as code on its own. A `Fence` knows where its lines are, and writes its closing and reopening
lines:

- one opened in the first four columns is found by a scan of the lines, paired as CommonMark pairs
  them (`_top_fences`), with no parsing;
- one in a nested list item, four spaces in or more, is *nested*: reopened in the first column, and
  its lines up to its close are taken as far out; so are those of an indented fence a part starts
  at, the cut having dropped its indentation;
- one opened in a quote (``> ```py``) is *contained*: closed and reopened in the quote, the fence
  line after the quote's ``>`` (and the rest of a code line cut in two after one too); so is one
  opened on a list item's marker line (``- ```py``), as far in as the item's text.

Only markdown-it tells the last two from indented code or plain text (`_block_fences`): the text is
parsed only when a line may hold one. A fence left unclosed there, or one that could not be written
again as a fence, is left as text. Indented code (four spaces in, at the top level) is found by
markdown-it as well (`indented_code`), asked for only when a part may start in an indented line.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from markdown_it.token import Token

from platforms.formatting import markdown
from platforms.formatting.blank import is_blank

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
_NEWLINE = re.compile("\n")
# A line that shows nothing in a part of empty code blocks: a fence line or a blank one, in a quote perhaps.
_FENCE_OR_BLANK_LINE = re.compile(r"[ \t>]*(?:(?:`{3,}|~{3,})[^\n]*)?")


@dataclass(frozen=True, slots=True)
class Fence:
    """A fenced code block: where its opening and closing lines are, and how to write them again
    for a part that is cut inside it."""

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
    markers, if in a quote), its lines up to its close taken as far out (see `_Splitter.assemble` in
    `gateway.splitting`), since so indented it would be indented code."""
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


def scan_fences(text: str, tokens: Callable[[], list[Token]] | None = None) -> list[Fence]:
    """The text's fences; ``tokens`` gives its block tokens (`markdown.block_tokens`), if asked."""
    deep = _DEEP_FENCE_LINE.search(text) or _CONTAINED_FENCE_LINE.search(text)
    block = _block_fences(text, tokens or (lambda: markdown.block_tokens(text))) if deep else []
    fences = _top_fences(text, block)
    if not block:
        return fences
    # A top-level fence line the block fences' lines pair with a later one: neither is a fence.
    starts = [f.open_start for f in block]
    ends = [f.close_end for f in block]

    def overlaps(f: Fence) -> bool:
        i = bisect.bisect_left(ends, f.open_start + 1)  # the first block fence ending past f's start
        return i < len(block) and starts[i] < f.close_end

    return sorted([f for f in fences if not overlaps(f)] + block, key=lambda f: f.open_start)


def _block_fences(text: str, tokens: Callable[[], list[Token]]) -> list[Fence]:
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
        if tok.type != "fence" or tok.map is None or not _closed(tok):
            continue
        first, last = tok.map[0], tok.map[1] - 1
        opening = _LINE.fullmatch(text, starts[first], line_end(first))
        if opening is not None:  # only spaces before it: in the first four columns, `_top_fences` finds it
            if len(opening.group(1)) >= 4:
                fences.append(Fence(opening.start(), opening.end(), starts[last], line_end(last), opening.group(1),
                                    opening.group(2), opening.group(3).strip(), True, nested=True))
            continue
        fence = _contained_fence(text, tok.markup, starts[first], line_end(first), starts[last], line_end(last))
        if fence is not None:
            fences.append(fence)
    return fences


def _contained_fence(text: str, ticks: str, start: int, end: int, close_start: int, close_end: int) -> Fence | None:
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
        return Fence(start, end, close_start, close_end, indent, ticks, info, True, contained=True)
    # Four columns in or more ("10. ```", or a quote in such an item): as a nested one, reopened in the
    # first column, its lines taken out as far; unless it is too far in within a quote as well.
    if not _reopens(indent.lstrip(" "), ticks):
        return None
    return Fence(start, end, close_start, close_end, indent, ticks, info, True, nested=True, contained=True)


@lru_cache(maxsize=256)
def _reopens(indent: str, ticks: str) -> bool:
    """``indent`` before a fence's lines still makes them a fence holding those lines' code."""
    tokens = markdown.block_tokens(f"{indent}{ticks}\n{indent}x\n{indent}{ticks}\n")
    return [(t.type, t.content) for t in tokens if t.type in ("fence", "code_block")] == [("fence", "x\n")]


def indented_code(text: str, tokens: Callable[[], list[Token]]) -> list[tuple[int, int]]:
    """The top-level indented code blocks, from the start of their first line to the end of their last."""
    if "\r" in text or "\0" in text:
        return []  # markdown-it rewrites \r and \0: its line numbers may not be this text's
    starts = [0, *(m.end() for m in re.finditer("\n", text))]
    return [(starts[tok.map[0]], starts[tok.map[1]] - 1 if tok.map[1] < len(starts) else len(text))
            for tok in tokens() if tok.type == "code_block" and tok.level == 0 and tok.map]


def _top_fences(text: str, block: list[Fence]) -> list[Fence]:
    """The fences opened in the first four columns, but for the lines of ``block`` fences (a closing
    ``  ```` of one opened on a list item's marker line would open a fence here)."""
    fences: list[Fence] = []
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
            fences.append(Fence(current.start(), current.end(), m.start(), m.end(), current.group(1),
                                current.group(2), current.group(3).strip(), True))
            current = None
    if current is not None:
        n = len(text)
        fences.append(Fence(current.start(), current.end(), n, n, current.group(1), current.group(2),
                            current.group(3).strip(), False))
    return fences


def outdented(lines: str, spaces: int) -> str:
    return re.sub(rf"^ {{1,{spaces}}}", "", lines, flags=re.MULTILINE)


def only_empty_code(part: str) -> bool:
    """``part`` holds code blocks with no code in them (in a quote, perhaps) and nothing else: rendered, it shows
    nothing, and a renderer sends such a part as written, its fences shown as typed (`markdown.Renderer.render`)."""
    if not all(_FENCE_OR_BLANK_LINE.fullmatch(line) for line in part.split("\n")):
        return False  # a line of text or code: parsed only for a part of fence lines and blank ones
    tokens = markdown.block_tokens(part)
    return any(t.type == "fence" for t in tokens) and all(
        t.type in ("blockquote_open", "blockquote_close") or (t.type == "fence" and is_blank(t.content) and _closed(t))
        for t in tokens)


def _closed(fence: Token) -> bool:
    """``fence`` ends at a closing fence line of its own, not where its container or the text ends (a line of
    struck tildes, ``~~~~a~~~~``, is such an unclosed fence to markdown-it)."""
    return fence.map is not None and fence.content.count("\n") == fence.map[1] - fence.map[0] - 2


def leaves_code_open(part: str) -> bool:
    """``part`` ends inside a fence it never closes: whatever is added after it is code."""
    fences = scan_fences(part)
    return bool(fences) and not fences[-1].closed
