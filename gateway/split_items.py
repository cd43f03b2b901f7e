"""The list items of a Markdown text, as a part cut inside a list must write them.

A part starting inside a list item (past its marker) has none, so the item's later lines, indented to
its text, are taken out as far as that text (`InLists.items_left` in `gateway.split_in_lists`): left four
spaces in or more, a paragraph of the item would be indented code, a nested item a line of the
paragraph before it. A blank line goes before the next item when it could not open a list right after
that text (``2.``, which would be a line of it: `Item.interrupts`). Items in a quote are left as they
are.

CommonMark numbers a list from its first item's number on, whatever the others' (``1.`` on every item,
as models often write them, shows 1, 2, 3); so a part starting further down a numbered list writes its
first item there with the number it is shown with (``4.``: `Item.number`), its later lines moved in as
far as the longer number needs (`written_with`); every platform's renderer, and the web chat page,
number on from it. A numbered list in an item left out that would run into that item's own list in the
part (both taken out as far, same delimiter) gets the other delimiter (``1)``). A list in a quote keeps
its numbers as written.

The items come from markdown-it's block tokens (`scan_list_items`), read only for a text cut in a list.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from markdown_it.token import Token

# A list item's marker, at most three columns past where its parent item's text starts.
ITEM_MARKER = re.compile(r" {0,3}([-+*]|\d{1,9}[.)])(?=[ \t]|$)")


@dataclass(frozen=True, slots=True)
class Item:
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


_TOP = Item(-1, -1, -1, 0, 0)
"""What holds a list at the top level: its items' markers start in the first four columns."""
_OTHER_DELIMITER = {".": ")", ")": "."}


@dataclass(frozen=True, slots=True)
class Rewritten:
    """An item a part writes with another marker than the text does (`InLists.rewritten` in
    `gateway.split_in_lists`)."""

    item: Item
    end: int
    """The end of what `marker` stands for in the text: the marker, and the spaces after it if they change."""
    marker: str
    shift: int
    """The columns the item's later lines gain (lose, if negative), to stay as far in as its text: ``10.``
    for ``1.`` takes a column more, which no more than one space after the marker can give back."""
    interrupts: bool
    """As `Item.interrupts`, with the number written here."""


def written_with(text: str, item: Item, number: int | None, other_delimiter: bool) -> Rewritten | None:
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
        return Rewritten(item, marker_end, marker, grown, interrupts)
    # The spaces after the marker give or take what it grows by, as far as they can (one to four).
    spaces = min(max(item.spaces - grown, 1), 4)
    return Rewritten(item, marker_end + item.spaces, marker + " " * spaces, grown + spaces - item.spaces, interrupts)


@dataclass(slots=True)
class _OpenList:
    """A list `scan_list_items` is in."""

    start: int  # the offset of its first line
    number: int | None  # of its next item; None for bullets
    which: int  # counted in the order lists open
    holder: int  # the marker offset of the item it is in; -1 at the top level


def scan_list_items(text: str, starts: list[int], tokens: Callable[[], list[Token]]) -> list[Item]:
    """The text's list items outside quotes, outermost first. An item whose columns cannot be told
    from its first line (a tab before its text, say) is left out, and so are the items in it."""
    if "\r" in text or "\0" in text:
        return []  # markdown-it rewrites them: its line numbers may not be this text's
    items: list[Item] = []
    # Per open container, what holds the lists opened in it: an item, `_TOP`, or None (a quote, an
    # item left out, or anything in one of those).
    stack: list[Item | None] = []
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


def _item(text: str, starts: list[int], lines: list[int], number: str, parent: Item) -> Item | None:
    """The item on ``lines`` (markdown-it's map), ``number`` its number ("" for a bullet)."""
    first, end = lines
    line = text[starts[first]:starts[first + 1] - 1 if first + 1 < len(starts) else len(text)]
    m = ITEM_MARKER.match(line, parent.content_column)
    if m is None or "\t" in line[:m.end() + 1]:
        return None
    rest = line[m.end():]
    spaces = len(rest) - len(rest.lstrip(" "))
    # As CommonMark reads it: the text starts a column past the marker when the marker ends its line
    # or five spaces follow it (indented code in the item), else where the spaces end.
    content = m.end() + (1 if not rest.strip() or spaces >= 5 else spaces)
    return Item(first, end, starts[first] + m.start(1), m.start(1), content,
                interrupts=number in ("", "1") and bool(rest.strip()), width=m.end() - m.start(1),
                spaces=spaces if rest.strip() else 0)

