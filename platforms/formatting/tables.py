"""A table as chat platforms can show it: aligned monospace columns in a code block, or, too wide for
a phone, a list per row.

No chat platform draws tables. Telegram, Slack and Discord wrap a code block's long lines where the
screen ends, rather than scroll them, which breaks a table's columns apart; a phone's chat bubble holds
some 30 to 40 columns of code. So a table whose aligned text is wider than `MAX_COLUMNS` is shown a row
at a time instead (`Renderer`'s ``_table_list``); one of a single column stays a code block: its lines wrap, but
it has no columns to break.

What models write in cells:

- ``<br>`` (``<br/>``, ``<br />``, in any case) starts a new line within the cell, as GitHub shows it
  (`enable`); escaped (``\\<br>``) or written with entities (``&lt;br&gt;``) it is text, as in any
  Markdown, and elsewhere raw HTML stays text. In aligned columns its row takes several lines, the
  other cells' lines left blank, and a rule then separates every row from the next;
- a ``|`` (written ``\\|``, as a cell's pipe must be) is shown ``\\|`` in aligned columns, never read as
  a column's edge;
- a row ends at its last cell that holds something: no dangling ``|``;
- a row of more cells than its header (a note in a last cell, a header one short) keeps them, in columns
  of no name (`keep_extra_cells`), where GFM drops them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.common.utils import mdTrim
from markdown_it.rules_block import StateBlock
from markdown_it.rules_block.table import escapedSplit, getLine
from markdown_it.rules_block.table import table as gfm_table
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType

from platforms.formatting.columns import width

MAX_COLUMNS = 40
"""The widest table shown as aligned columns; a wider one is a list per row."""
_BREAK = re.compile(r"[ \t]*<br[ \t]*/?>[ \t]*", re.IGNORECASE)
_CELL = "table_cell"
"""`cell_env`'s key."""


def enable(md: MarkdownIt) -> MarkdownIt:
    """``md`` reading a ``<br>`` in a table cell as a line break (a ``hardbreak`` token): in the tables of
    what it parses, and in what it parses inline (``parseInline``) with a `cell_env`."""
    md.core.ruler.before("text_join", "table_breaks", _breaks)
    return md


def keep_extra_cells(md: MarkdownIt) -> MarkdownIt:
    """``md``'s tables keeping each body row's cells beyond its header's, which GFM drops, the header an
    empty cell for each column only such cells fill: what a row says is never lost."""
    # markdown-it's own alternatives for its table rule: the blocks a table may interrupt.
    md.block.ruler.at("table", _table, {"alt": ["paragraph", "reference"]})
    return md


def _table(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    first = len(state.tokens)
    if not gfm_table(state, start_line, end_line, silent):
        return False
    if not silent:
        state.tokens[first:] = _with_extra_cells(state, state.tokens[first:])
    return True


def _with_extra_cells(state: StateBlock, table: list[Token]) -> list[Token]:
    """A table's tokens, each body row's cells beyond the header's added, read as markdown-it's table rule
    reads a row's (its line split at each pipe no backslash escapes), and empty header cells over them."""
    out: list[Token] = []
    header_end, header_level, header_cells, header_line = 0, 0, 0, 0
    widest, cells, line, body = 0, 0, 0, False
    for tok in table:
        if tok.type == "tr_open":
            cells, line = 0, tok.map[0] if tok.map else line
        elif tok.type in ("th_open", "td_open"):
            cells += 1
        elif tok.type == "tbody_open":
            body = True
        elif tok.type == "tr_close" and not body:
            header_end, header_level, header_cells, header_line = len(out), tok.level + 1, cells, line
        elif tok.type == "tr_close":
            columns = escapedSplit(mdTrim(getLine(state, line)))
            if columns and columns[0] == "":
                columns.pop(0)
            if columns and columns[-1] == "":
                columns.pop()
            for cell in columns[cells:]:
                out.extend(_cell("td", mdTrim(cell), tok.level + 1, line))
            widest = max(widest, len(columns))
        out.append(tok)
    empty = [t for _ in range(header_cells, widest) for t in _cell("th", "", header_level, header_line)]
    out[header_end:header_end] = empty
    return out


def _cell(tag: str, content: str, level: int, line: int) -> list[Token]:
    """A cell's tokens as markdown-it's table rule pushes them for a row on ``line``, nested at ``level``."""
    tokens = [Token(f"{tag}_open", tag, 1, level=level),
              Token("inline", "", 0, level=level + 1, content=content, map=[line, line + 1], children=[]),
              Token(f"{tag}_close", tag, -1, level=level)]
    for tok in tokens:
        tok.block = True
    return tokens


def cell_env(env: EnvType) -> EnvType:
    """``env`` for ``parseInline`` of a table cell's source, which holds no sign of being one."""
    return {**env, _CELL: True}


def _breaks(state: StateCore) -> None:
    # Before text_join, which merges an escape (\<) or an entity (&lt;) into the text around it: the
    # text of "\<br>" and "&lt;br&gt;" would then read as the tag, where Markdown shows them as typed.
    tokens = state.tokens
    for n, tok in enumerate(tokens):
        cell = state.env.get(_CELL) if state.inlineMode else n > 0 and tokens[n - 1].type in ("th_open", "td_open")
        if tok.type == "inline" and cell:
            tok.children = _with_breaks(tok.children or ())


def _with_breaks(children: Sequence[Token]) -> list[Token]:
    """A cell's inline tokens, each ``<br>`` in its text a line break (not in code, where it is code)."""
    out: list[Token] = []
    for tok in children:
        if tok.type != "text" or not _BREAK.search(tok.content):
            out.append(tok)
            continue
        for n, piece in enumerate(_BREAK.split(tok.content)):
            if n:
                out.append(Token("hardbreak", "br", 0, level=tok.level))
            if piece:
                out.append(Token("text", "", 0, level=tok.level, content=piece))
    return out


def _lines(cell: str) -> list[str]:
    """A cell's lines, each one's runs of spaces one space, without blank lines at either end."""
    lines = [" ".join(line.split()).replace("|", "\\|") for line in cell.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def table_text(rows: Sequence[Sequence[str]], aligns: Sequence[str]) -> str:
    """A table's cells as aligned monospace columns, its header ruled off from the body; see the module
    docstring for line breaks, pipes and empty cells."""
    cells = [[_lines(c) for c in r] for r in rows]
    for r in cells:
        while r and not r[-1]:
            r.pop()
    columns = max((len(r) for r in cells), default=0)
    widths = [max((width(line) for r in cells if k < len(r) for line in r[k]), default=0) for k in range(columns)]
    aligns = [*aligns, *[""] * columns][:columns]

    def cell(text: str, k: int) -> str:
        pad = widths[k] - width(text)
        if aligns[k] == "right":
            return " " * pad + text
        if aligns[k] == "center":
            return " " * (pad // 2) + text + " " * (pad - pad // 2)
        return text + " " * pad

    rule = "-+-".join("-" * w for w in widths)
    ruled = any(len(c) > 1 for r in cells[1:] for c in r)  # a row of several lines: where does it end?
    lines: list[str] = []
    for n, r in enumerate(cells):
        if n == 1 or (ruled and n > 1):
            lines.append(rule)
        for i in range(max((len(c) for c in r), default=1)):
            line = [c[i] if i < len(c) else "" for c in r]
            while line and not line[-1]:
                line.pop()
            lines.append(" | ".join(cell(c, k) for k, c in enumerate(line)).rstrip())
    if len(cells) == 1:
        lines.append(rule)
    return "\n".join(lines)


def too_wide(rows: Iterable[Sequence[str]], aligns: Sequence[str]) -> bool:
    """Whether the aligned columns of `table_text` are wider than `MAX_COLUMNS`: its rule is (its columns and the
    `` | `` between them), told from each cell's width, remembered, and from the rows read up to there (a wide
    header, the first, tells alone), without laying a long table out again for each of the splitter's candidates;
    else one of its lines is."""
    widths: list[int] = []
    read: list[Sequence[str]] = []
    for row in rows:
        read.append(row)
        shapes = [_shape(cell) for cell in row]
        while shapes and shapes[-1] is None:  # `table_text` drops a row's empty last cells
            shapes.pop()
        widths[len(widths):] = [0] * (len(shapes) - len(widths))
        for k, shape in enumerate(shapes):
            if shape is not None and shape > widths[k]:
                widths[k] = shape
        if widths and sum(widths) + 3 * (len(widths) - 1) > MAX_COLUMNS:
            return True  # the widths only grow with the rows after
    return any(width(line) > MAX_COLUMNS for line in table_text(read, aligns).split("\n"))


def _shape(cell: str) -> int | None:
    """The width of a cell's widest line in `table_text`; None for a cell of no line (it holds nothing). A long
    cell's is worked out each time (`_remembered_shape`)."""
    return _shape_of(cell) if len(cell) > 2_000 else _remembered_shape(cell)


@lru_cache(maxsize=8192)
def _remembered_shape(cell: str) -> int | None:
    """`_shape_of`, remembered for the short cells a table's rows hold as a rule."""
    return _shape_of(cell)


def _shape_of(cell: str) -> int | None:
    lines = _lines(cell)
    return max(width(line) for line in lines) if lines else None
