"""A part that starts inside list items: its lines taken out of them, and their numbers gone on with.

A part starting inside a list item (past its marker) has none, so the item's later lines are taken out
as far as its text, and a blank line goes before the next item when it could not open a list right after
that text; a part starting further down a numbered list writes its first item there with the number it is
shown with (`gateway.split_items` reads the items and says how each is written). This is where
`gateway.splitting`'s splitter asks, for a part from a given offset, which items it leaves out and how
its lines and markers read then (`items_left`, `rewritten`, `out_of_items`).

Apart from `gateway.splitting` because lists are the one structure a part must rewrite rather than
close and reopen: the splitter inherits these methods, and their state (the items, parsed only for a
text cut in a list, and the line offsets) is the splitter's, set up there.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

from markdown_it.token import Token

from gateway.split_fences import Fence
from gateway.split_items import ITEM_MARKER, Item, Rewritten, scan_list_items, written_with

# A line indented as far as code: only then can losing its list item's indentation change what it is.
_DEEP_LINE = re.compile(r"\n {4}")
# A numbered list item's line: a part starting in its list may have to write it with another number.
_NUMBERED_LINE = re.compile(r"^ *\d{1,9}[.)](?:[ \t]|$)", re.MULTILINE)
_NEWLINE = re.compile("\n")
_SPACES = re.compile(" *")


class InLists:
    """The splitter's methods for a part that starts inside list items. Its text and state, and `inside`,
    `in_code` and `block_tokens`, are the splitter's (`gateway.splitting._Splitter`)."""

    text: str
    _items: list[Item] | None
    _item_markers: list[int]
    _item_at: dict[int, Item]
    _item_lines: dict[int, Item] | None
    _line_starts: list[int]
    block_tokens: Callable[[], list[Token]]
    inside: Callable[[int], Fence | None]
    in_code: Callable[[int], bool]

    def items_left(self, start: int, since: int, end: int) -> list[tuple[Item, int]]:
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
        if start == 0 or (start == line and text[start] in "-+*" and ITEM_MARKER.match(text, start)):
            return False
        if text[line] in " \t" or ITEM_MARKER.match(text, line):
            return True
        return line > 0 and not text[text.rfind("\n", 0, line - 1) + 1:line].isspace()

    def numbered_line(self, since: int, end: int) -> bool:
        """A numbered item's marker may be on a line from the one holding ``since`` to ``end``."""
        return _NUMBERED_LINE.search(self.text, self.text.rfind("\n", 0, since) + 1, end) is not None

    def list_items(self) -> list[Item]:
        if self._items is None:  # parsed only for a text cut in a list
            self._line_starts = [0, *(m.end() for m in _NEWLINE.finditer(self.text))]
            self._items = scan_list_items(self.text, self._line_starts, self.block_tokens)
            self._item_markers = [item.marker for item in self._items]
            self._item_at = {item.marker: item for item in self._items}
        return self._items

    def rewritten(self, start: int, since: int, end: int, items: list[tuple[Item, int]]) -> dict[int, Rewritten]:
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
        out: dict[int, Rewritten] = {}
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
            if (rewritten := written_with(text, item, number, other)) is not None:
                out[item.first_line] = rewritten
        return out

    def taken_out(self, items: list[tuple[Item, int]], pos: int, numbers: dict[int, Rewritten]) -> int:
        """The columns the line holding ``pos`` loses (gains, if negative): those of the innermost of
        ``items`` it is in, less those a rewritten item it is a later line of gains."""
        line = bisect.bisect_right(self._line_starts, pos) - 1
        lost = next((columns for item, columns in reversed(items) if line < item.end_line), 0)
        return lost - next((r.shift for r in numbers.values() if r.item.first_line < line < r.item.end_line), 0)

    def out_of_items(self, items: list[tuple[Item, int]], numbers: dict[int, Rewritten], start: int,
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
