"""Cutting Markdown into runs of top-level blocks that parse the same alone as in the whole.

The splitter measures many candidate parts of one reply, each rendered whole; all but
the end of each candidate were rendered by the candidate before. `chunks` cuts a text
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
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"(`{3,}|~{3,})(.*)")
_INDENTED_FENCE = re.compile(r"[ \t]+(?:```|~~~)")
_LIST_ITEM = re.compile(r"(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")


def chunks(markdown: str) -> list[str]:
    """``markdown`` cut into runs that, joined, give it back; one run when no cut is safe."""
    if "\r" in markdown or "\0" in markdown:
        return [markdown]
    out: list[str] = []
    last = pos = 0
    fence = ""  # the marker of the fence open at the top level, if any
    blank_before = in_list = False
    for line in markdown.split("\n"):
        if _INDENTED_FENCE.match(line):
            break
        m = _FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip(" \t"):
                fence = ""
        else:
            item = _LIST_ITEM.match(line.lstrip(" \t")) is not None  # an item may be indented up to 3
            # After a blank line a line in the first column ends any list, unless it is an item of it.
            if blank_before and line[:1] not in ("", " ", "\t") and not (item and in_list):
                if pos > last:
                    out.append(markdown[last:pos])
                    last = pos
                in_list = False
            in_list = in_list or item
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                fence = m.group(1)
        blank_before = not fence and not line.strip(" \t")
        pos += len(line) + 1
    out.append(markdown[last:])
    return out
