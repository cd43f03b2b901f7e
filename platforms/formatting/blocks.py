"""Cutting Markdown into runs of top-level blocks that parse the same alone as in the whole.

The splitter measures many candidate parts of one reply, each rendered whole; all but
the end of each candidate were rendered by the candidate before. `runs` cuts a text
where what comes after cannot change how markdown-it reads what comes before (and the
other way round), so a renderer can render each run once and join the results
(`Renderer.render` does, with a cache).

A cut goes before a line that follows a blank line, starts in the first column with a
character that opens no list item, quote or fence, and is not inside a fenced code
block. Where that cannot be told by looking at lines alone, no cut is made: after an
indented fence line (it may open a fence at the top level or one inside a list item,
which end differently), and nowhere in a text with a carriage return or NUL (which
markdown-it rewrites first). A link reference definition anywhere changes links
everywhere, so the renderer gives every run the whole text's definitions
(`markdown.definitions`).

A list is one block however long, and a reply that is one long list would be rendered
whole for every candidate; so a top-level list is cut before each of its items too, and
between it and a list of another kind right after it, once it is seen to end. Its item
runs parse as lists of their own, which the renderer joins to the one before as the
whole list's items are joined (`Run`), loose if the list is. That takes a list whose lines
all say plainly where they stand: each item's marker at most three columns in, every other
line (after a blank line or not) as far in as its item's text, up to a line that ends the
list. Anything else in it (a lazy line, a tab, what may be a table's header) leaves that
list uncut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"(`{3,}|~{3,})(.*)")
_INDENTED_FENCE = re.compile(r"[ \t]+(?:```|~~~)")
_LIST_ITEM = re.compile(r"(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")
# A list item's marker (a bullet, or a number and its delimiter) and what follows it on its line.
_MARKER = re.compile(r"(?:([-+*])|(\d{1,9})([.)]))(?=[ \t]|$)([ \t]*)(.*)")
_RULE = re.compile(r"([-*_])(?:[ \t]*\1){2,}[ \t]*")
# What starts a block that ends a list, no lazy line of a paragraph: a heading, a quote, a fence.
_INTERRUPTS = re.compile(r"#{1,6}(?:[ \t]|$)|>|`{3,}(?![^`\n]*`)|~{3,}")
# (A run of backticks whose info string holds a backtick opens no fence: ``` x`y is a paragraph's line.)


@dataclass(frozen=True, slots=True)
class Run:
    """A run of the text (`runs`), and how its first block stands to the run before it."""

    text: str
    continues: bool = False
    """It starts with a later item of the list the run before it ends in: rendered, its list joins
    that one as the whole list's items are joined."""
    number: int = 1
    """If it ``continues`` a numbered list: the number its first item is shown with there."""
    loose: bool | None = False
    """Whether the list it starts with (or a later item of) is loose as a whole, its items and each
    item's paragraphs separated by blank lines, though the run alone might read it tight: yes when
    a blank line comes before one of its items, no when it has no blank line, None when its only
    blank lines are in its items (it is loose if one of its runs alone reads loose)."""


def chunks(markdown: str) -> list[str]:
    """``markdown`` cut into runs that, joined, give it back; one run when no cut is safe."""
    return [run.text for run in runs(markdown)]


def runs(markdown: str) -> list[Run]:
    """``markdown`` cut into runs (see the module docstring) that, joined, give it back."""
    if "\r" in markdown or "\0" in markdown:
        return [Run(markdown)]
    at, how = [0], [Run("")]  # where each run starts, and how (its text filled in at the end)

    def cut(pos: int, run: Run) -> None:
        if pos > at[-1]:
            at.append(pos)
            how.append(run)
        elif pos == at[-1]:  # the list a run starts with turned out loose
            how[-1] = run

    pos = 0
    fence = ""  # the marker of the fence open at the top level, if any
    blank_before = in_list = False
    items = _ItemCuts()
    for line in markdown.split("\n"):
        if items.open:
            for where, run in items.read(line, pos):
                cut(where, run)
        if not items.open and _INDENTED_FENCE.match(line):
            break
        m = _FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip(" \t"):
                fence = ""
        elif not items.open:
            item = _LIST_ITEM.match(line.lstrip(" \t")) is not None  # an item may be indented up to 3
            # After a blank line a line in the first column ends any list, unless it is an item of it.
            if blank_before and line[:1] not in ("", " ", "\t") and not (item and in_list):
                cut(pos, Run(""))
                in_list = False
            if item and not in_list and (blank_before or pos == 0):
                items.start(line, pos, pos == at[-1])
            in_list = in_list or item
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                fence = m.group(1)
        blank_before = not fence and not line.strip(" \t")
        pos += len(line) + 1
    for where, run in items.end():
        cut(where, run)
    ends = [*at[1:], len(markdown)]
    return [Run(markdown[a:b], run.continues, run.number, run.loose) for a, b, run in zip(at, ends, how)]


class _ItemCuts:
    """The top-level list `runs` is in, if one it may cut: the cuts before its items, made once it ends."""

    def __init__(self) -> None:
        self.open = False
        self._cuts: list[tuple[int, int]] = []

    def start(self, line: str, pos: int, at_run_start: bool) -> None:
        """At ``line``, at ``pos``, that opens a list if it is an item (after a blank line, or the
        text's first line); ``at_run_start``: a run starts there (else it cannot be made loose)."""
        spaces = len(line) - len(line.lstrip(" "))
        m = _MARKER.match(line, spaces) if spaces <= 3 and not _RULE.fullmatch(line, spaces) else None
        if m is not None and "\t" not in m.group(4) and "|" not in line:
            self._open(m, pos, at_run_start)

    def read(self, line: str, pos: int) -> list[tuple[int, Run]]:
        """The list's next line, at ``pos``: the cuts made if it ends the list."""
        if not line.strip(" \t"):
            if self._empty:
                return self._drop()  # an item begun with a blank line ends with it: who knows what follows
            self._blank = True
            return []
        spaces = len(line) - len(line.lstrip(" "))
        if line[spaces] == "\t":
            return self._drop()
        self._empty = False
        blank, self._blank = self._blank, False
        if blank and spaces == 0 and not _LIST_ITEM.match(line):
            return self.end()  # a blank line, then the first column: it ended before the blank line
        if spaces >= self._text:  # in the item
            if blank:  # the list is loose if it is between two blocks of the item, not if it is in one
                if not self._at_run_start:
                    return self._drop()
                self._blank_inside = True
            return []
        if spaces > 3:
            return self._drop()  # a lazy line of a paragraph, or indented code: who knows
        m = None if _RULE.fullmatch(line, spaces) else _MARKER.match(line, spaces)
        if m is None and (blank or _RULE.fullmatch(line, spaces) or _INTERRUPTS.match(line, spaces)):
            return self.end()  # a block that ends the list (a rule, a heading, a quote, a fence), or follows it
        if m is None or "\t" in m.group(4) or "|" in line:
            return self._drop()  # a lazy line of a paragraph, a table's header (if a delimiter row follows)...
        if (m.group(1) or m.group(3)) == self._kind:
            if blank:
                if not self._at_run_start:
                    return self._drop()
                self._loose = True  # items separated by a blank line
            self._cuts.append((pos, self._number))
            self._item(m)
            return []
        # A marker of another kind (never a lazy line): the list ends, another starts.
        cuts = [*self.end(), (pos, Run(""))]
        self._open(m, pos, True)
        return cuts

    def end(self) -> list[tuple[int, Run]]:
        """The list has ended: the cuts before its items stand (and its first run is made loose if it is)."""
        if not self.open:
            return []
        self.open = False
        loose = True if self._loose else None if self._blank_inside else False
        first = [(self._start, Run("", loose=loose))] if loose is not False else []
        return first + [(pos, Run("", True, number, loose)) for pos, number in self._cuts]

    def _open(self, m: re.Match[str], pos: int, at_run_start: bool) -> None:
        self.open, self._blank, self._loose, self._blank_inside, self._cuts = True, False, False, False, []
        self._start, self._at_run_start = pos, at_run_start
        self._kind = m.group(1) or m.group(3)
        self._number = int(m.group(2)) if m.group(2) else 1
        self._item(m)

    def _item(self, m: re.Match[str]) -> None:
        """At an item of the list, ``m`` its marker: where its text starts, as CommonMark reads it (a
        column past its marker when nothing follows the marker or five spaces do, indented code in
        the item; else where the spaces end), and the next item's number."""
        spaces, self._empty = len(m.group(4)), not m.group(5)
        self._text = m.start(4) + (1 if self._empty or spaces >= 5 else spaces)
        self._number += 1 if m.group(2) else 0

    def _drop(self) -> list[tuple[int, Run]]:
        self._cuts, self.open = [], False
        return []
