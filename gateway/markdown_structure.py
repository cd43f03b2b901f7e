"""Where a Markdown text may be cut, as markdown-it reads it: inline styles, atoms and tables.

`gateway.splitting` asks this module about the text between code fences. Each
stretch between blank lines (a *region*) is parsed on first use with the same
Markdown dialect the platform renderers read (`platforms.formatting.markdown`),
through a parser whose inline rules also note where in the source each token
came from, so the answers are positions in the text:

- `Style`: an emphasis, strong, strikethrough or code span, with the source
  positions of its opening and closing markers. A part cut inside one closes it
  and the next part reopens it.
- atoms: links, images, autolinks, bare URLs, entity and backslash escapes, which are
  never cut (unless one alone is longer than a part). A region is read with the text's link
  reference definitions, wherever they are, so a reference link (``[the docs][d1]``) is one too:
  cut at a space in its label, each part showed half of it as typed, brackets and all.
- literal markers: the ``*``, ``_`` and ``~`` that could mark a style but that no style pairs (the ``** **``
  of ``**a - ** ** b**``, the ``_``s of ``_i_https://…``), shown as typed: a part starting or ending with
  them escapes them (`gateway.splitting`), as beside the markers it adds, or at a cut within a word, they
  could pair with those, or with each other.
- `Table`: a GFM table at the top level or in a quote (not in a list item); it is cut only
  between body rows, and a part that starts inside it repeats its header rows (a quote's with
  their ``>``: without them, the rows of a quoted table showed as typed, pipes and all). A body row
  no part can hold is cut inside (`Row`): after a pipe between cells, or in a cell's text, whose
  styles and atoms are known as a paragraph's are.

Anything markdown-it cannot map back to the source exactly (a mismatch between a
token's content and its lines) is left out: the splitter then treats that text
as plain, which is never worse than before this module existed.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.common.utils import MD_TRIM_CHARS
from markdown_it.rules_inline import (
    StateInline,
    autolink,
    backtick,
    emphasis,
    entity,
    escape,
    image,
    link,
    strikethrough,
)
from markdown_it.token import Token

from platforms.formatting import bare_urls, flanking, tables
from platforms.formatting.markdown import Definitions

_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_CLOSE_OF = {"strong_open": "strong_close", "em_open": "em_close", "s_open": "s_close"}


@dataclass(frozen=True, slots=True)
class Style:
    open_start: int
    open_end: int
    close_start: int
    close_end: int
    opener: str
    closer: str


@dataclass(frozen=True, slots=True)
class Row:
    """A table's body row, as far as a part cut inside it needs: a row longer than a part is cut after a
    pipe between its cells or within a cell's text, and the next part goes on with a row of its own."""

    start: int
    """Its first character past its quote markers and indentation."""
    end: int
    first: str
    """Its first cell's text as written, which a part going on past that cell repeats: the row's label."""
    edges: tuple[int, ...]
    """The pipes that end its cells (not one it starts with): the part going on after the k-th is in cell k+1."""
    cells: tuple[tuple[int, int], ...]
    """The cells' text, trimmed, whose inline structure is known (mapped back to the source): cuts go there."""


@dataclass(frozen=True, slots=True)
class Table:
    start: int
    head_end: int
    """``text[start:head_end]`` is the header and delimiter rows, newline included."""
    row_ends: tuple[int, ...]
    """Where each body row ends (its newline, or the table's end): the only cuts inside it but those
    in a row no part holds (`Structure.cuts_row`)."""
    rows: tuple[Row, ...]

    @property
    def end(self) -> int:
        return self.row_ends[-1] if self.row_ends else self.head_end


@dataclass(slots=True)
class _Region:
    styles: list[Style] = field(default_factory=list)
    atoms: list[tuple[int, int]] = field(default_factory=list)
    literal: list[int] = field(default_factory=list)
    """Where the literal markers are, one position per character, in order."""
    tables: list[Table] = field(default_factory=list)
    index: _Index | None = None
    """Built on the region's first lookup, once it is whole (`_Region.indexed`)."""

    def indexed(self) -> _Index:
        if self.index is None:
            self.index = _Index(self)
        return self.index


class _MaxTree:
    """The largest of ``values`` over each power-of-two stretch of them: which of the first ``m`` reach a bound is
    found in the steps down to those that do, not by reading every one."""

    def __init__(self, values: list[int]) -> None:
        size = 1
        while size < len(values):
            size *= 2
        tree = [-1] * (2 * size)
        tree[size:size + len(values)] = values
        for i in range(size - 1, 0, -1):
            tree[i] = max(tree[2 * i], tree[2 * i + 1])
        self._size, self._tree = size, tree

    def reaching(self, m: int, bound: int, *, first: bool = False) -> list[int]:
        """The indices below ``m`` whose value is ``bound`` or more, ascending (only the lowest if ``first``)."""
        size, tree, found = self._size, self._tree, []
        # The stretches that make up the first m, left to right; then down each one that reaches the bound.
        left, right, lo, hi = [], [], size, size + m
        while lo < hi:
            if lo & 1:
                left.append(lo)
                lo += 1
            if hi & 1:
                hi -= 1
                right.append(hi)
            lo, hi = lo >> 1, hi >> 1
        for node in left + right[::-1]:
            stack = [node]
            while stack:
                node = stack.pop()
                if tree[node] < bound:
                    continue
                if node < size:
                    stack += (2 * node + 1, 2 * node)  # the left one popped first: ascending
                    continue
                found.append(node - size)
                if first:
                    return found
        return found


class _Index:
    """A region's styles and atoms arranged for lookups in about log n steps each, where reading them all took
    seconds for a paragraph of thousands of nested strikethroughs (a lookup at each of a part's candidate cuts)."""

    def __init__(self, region: _Region) -> None:
        styles = region.styles
        self.by_open_end = sorted(range(len(styles)), key=lambda i: styles[i].open_end)
        self.open_ends = [styles[i].open_end for i in self.by_open_end]
        self.closes = _MaxTree([styles[i].close_start for i in self.by_open_end])
        self.atom_starts = [a for a, _ in region.atoms]
        self.atom_ends = _MaxTree([b for _, b in region.atoms])
        # Where a cut splits a marker or an atom, as ranges of positions (inclusive), overlapping ones merged.
        inside = sorted([*((s.open_start + 1, s.open_end) for s in styles),
                         *((s.close_start + 1, s.close_end - 1) for s in styles),
                         *((a + 1, b - 1) for a, b in region.atoms)])
        merged: list[list[int]] = []
        for lo, hi in inside:
            if lo > hi:
                continue
            if merged and lo <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        self.inside_starts = [lo for lo, _ in merged]
        self.inside_ends = [hi for _, hi in merged]

    def open_at(self, pos: int) -> list[int]:
        """The indices of the styles with ``open_end <= pos <= close_start``, in the region's order."""
        m = bisect.bisect_right(self.open_ends, pos)
        return sorted(self.by_open_end[k] for k in self.closes.reaching(m, pos))

    def atom_at(self, pos: int) -> int | None:
        """The index of the first atom (by start) with ``a < pos < b``."""
        found = self.atom_ends.reaching(bisect.bisect_left(self.atom_starts, pos), pos + 1, first=True)
        return found[0] if found else None

    def splits(self, pos: int) -> bool:
        """``pos`` falls inside a marker (past its first character) or an atom."""
        i = bisect.bisect_right(self.inside_starts, pos) - 1
        return i >= 0 and pos <= self.inside_ends[i]


# -- a parser that remembers positions ---------------------------------------------------

def _first_pushed(state: StateInline) -> int:
    # Text still pending becomes a token of its own the moment a rule pushes one: skip it.
    return len(state.tokens) + (1 if state.pending else 0)


def _delimiters(rule: Callable[[StateInline, bool], bool]) -> Callable[[StateInline, bool], bool]:
    # Emphasis and strikethrough push one text token per marker run piece; each learns its offset.
    def tokenize(state: StateInline, silent: bool) -> bool:
        start, before = state.pos, _first_pushed(state)
        if not rule(state, silent):
            return False
        for tok in state.tokens[before:]:
            tok.meta["pos"] = start
            start += len(tok.content)
        return True

    return tokenize


def _ranged(rule: Callable[[StateInline, bool], bool]) -> Callable[[StateInline, bool], bool]:
    # Code spans, links, images, autolinks and escapes: their first token learns the source range.
    def tokenize(state: StateInline, silent: bool) -> bool:
        start, before = state.pos, _first_pushed(state)
        if not rule(state, silent):
            return False
        if not silent and len(state.tokens) > before:
            state.tokens[before].meta["range"] = (start, state.pos)
        return True

    return tokenize


def _bare_url(state: StateInline, silent: bool) -> bool:
    # The rule starts at the scheme's ":", past the scheme it takes back: the range comes from the URL.
    before = len(state.tokens)
    if not bare_urls.bare_url(state, silent):
        return False
    if not silent:
        link = next(t for t in state.tokens[before:] if t.type == "link_open")
        link.meta["range"] = (state.pos - len(str(link.attrGet("href"))), state.pos)
    return True


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # A row's cells beyond its header's show on every platform: read, they are cut between words as the others are.
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    md = flanking.enable(tables.keep_extra_cells(md))  # styles where the renderers' parser reads them
    md.disable("text_join")  # it would merge escapes and entities into text, and drop their ranges
    md.disable("fragments_join")  # it would merge the markers no style pairs into text, and drop their positions
    md.inline.ruler.at("emphasis", _delimiters(emphasis.tokenize))
    md.inline.ruler.at("strikethrough", _delimiters(strikethrough.tokenize))
    for name, rule in (("backticks", backtick), ("link", link), ("image", image), ("autolink", autolink),
                       ("entity", entity), ("escape", escape)):
        md.inline.ruler.at(name, _ranged(rule))
    md.inline.ruler.after("text", "bare_url", _bare_url)
    return md


# -- the structure of one text ------------------------------------------------------------

class Structure:
    """Lazily parsed facts about ``text``; ``fences`` are ``(start, end)`` ranges of code blocks,
    which hold no inline structure and bound the regions."""

    def __init__(self, text: str, fences: Sequence[tuple[int, int]], references: Definitions = ()) -> None:
        self.text = text
        self._references = {label: {"href": href, "title": title} for label, href, title in references}
        separators = sorted([*((m.start() + 1, m.end() - 1) for m in _BLANK_LINE.finditer(text)), *fences])
        self._sep_starts = [s for s, _ in separators]
        self._seps = separators
        self._regions: dict[int, _Region] = {}

    def styles_open_at(self, pos: int) -> list[Style]:
        """Styles whose markers enclose ``pos`` (``open_end <= pos <= close_start``), outermost first."""
        region = self._region(pos)
        return [region.styles[i] for i in region.indexed().open_at(pos)]

    def splits_marker(self, pos: int) -> bool:
        """A cut at ``pos`` would fall inside a marker, an atom or a table row, or leave a style empty."""
        if self._splits_inline(pos):
            return True
        table = self.table_at(pos)
        return table is not None and pos not in table.row_ends

    def _splits_inline(self, pos: int) -> bool:
        return self._region(pos).indexed().splits(pos)

    def row_at(self, pos: int) -> Row | None:
        """The table body row whose text holds ``pos`` (past its first character, up to its end)."""
        table = self.table_at(pos)
        if table is None or not table.rows:
            return None
        i = bisect.bisect_left(table.row_ends, pos)
        row = table.rows[i] if i < len(table.rows) else None
        return row if row is not None and row.start < pos <= row.end else None

    def cuts_row(self, pos: int) -> bool:
        """A cut at ``pos``, inside a table body row, leaves both pieces rows a reader follows: right after a
        pipe between cells, or in a cell's text whose structure is known, not inside a marker or an atom."""
        row = self.row_at(pos)
        if row is None or pos >= row.end:
            return False
        if pos - 1 in row.edges:
            return True
        return any(a < pos <= b for a, b in row.cells) and not self._splits_inline(pos)

    def literal_run(self, pos: int) -> int:
        """The end of the run of literal markers starting at ``pos``; ``pos`` when none does."""
        literal = self._region(pos).literal
        i, end = bisect.bisect_left(literal, pos), pos
        while i < len(literal) and literal[i] == end:
            i, end = i + 1, end + 1
        return end

    def literal_run_to(self, end: int) -> int:
        """The start of the run of literal markers ending at ``end``; ``end`` when none does."""
        if end <= 0:
            return end
        literal = self._region(end - 1).literal
        i, start = bisect.bisect_left(literal, end) - 1, end
        while i >= 0 and literal[i] == start - 1:
            i, start = i - 1, start - 1
        return start

    def atom_at(self, pos: int) -> tuple[int, int] | None:
        region = self._region(pos)
        i = region.indexed().atom_at(pos)
        return None if i is None else region.atoms[i]

    def atoms_starting_in(self, start: int, end: int) -> list[tuple[int, int]]:
        """The atoms of the region holding ``start`` that begin from ``start`` up to before ``end``, in order."""
        atoms = self._region(start).atoms
        return atoms[bisect.bisect_left(atoms, (start,)):bisect.bisect_left(atoms, (end,))]

    def table_at(self, pos: int) -> Table | None:
        """The table whose rows hold ``pos`` (from its first character to its end)."""
        return next((t for t in self._region(pos).tables if t.start < pos <= t.end), None)

    def _region(self, pos: int) -> _Region:
        i = bisect.bisect_right(self._sep_starts, pos) - 1
        start = max(self._seps[i][1], 0) if i >= 0 else 0
        if i >= 0 and pos < self._seps[i][1]:
            return _Region()  # inside a separator: whitespace or a fence
        end = self._seps[i + 1][0] if i + 1 < len(self._seps) else len(self.text)
        region = self._regions.get(start)
        if region is None:
            region = self._regions[start] = _parse_region(self.text, start, end, self._references)
        return region


def _parse_region(text: str, start: int, end: int, references: dict[str, dict[str, str]]) -> _Region:
    src = text[start:end]
    line_starts = [0, *(m.end() for m in re.finditer("\n", src))]
    region = _Region()
    tokens = _parser().parse(src, {"references": dict(references)})  # a copy: a parse adds the region's own
    quotes = 0  # the quotes open here: a table in quotes only has its rows' ">"s in its header rows too
    for i, tok in enumerate(tokens):
        quotes += tok.type == "blockquote_open"
        quotes -= tok.type == "blockquote_close"
        if tok.type == "table_open" and tok.level == quotes and tok.map is not None:
            region.tables.append(_table(src, start, line_starts, tok.map, _body_cells(tokens, i), text, region))
        elif tok.type == "inline" and tok.map is not None and not _in_table(tokens, i):
            where = _locator(src, start, line_starts, tok)
            if where is not None:
                _collect(tok.children or [], where, text, region)
    region.atoms.sort()  # by start, for `Structure.atoms_starting_in`
    region.literal.sort()
    return region


def _in_table(tokens: list[Token], i: int) -> bool:
    return i > 0 and tokens[i - 1].type in ("th_open", "td_open")


def _body_cells(tokens: list[Token], i: int) -> dict[int, list[Token]]:
    """The inline tokens of the cells of each body row of the table opening at ``tokens[i]``, by line."""
    rows: dict[int, list[Token]] = {}
    line = -1
    for j in range(i + 1, len(tokens)):
        tok = tokens[j]
        if tok.type == "table_close":
            break
        if tok.type == "tr_open" and tok.map is not None:
            line = tok.map[0]
        elif tok.type == "inline" and tokens[j - 1].type == "td_open" and line >= 0:
            rows.setdefault(line, []).append(tok)
    return rows


def _table(src: str, base: int, line_starts: list[int], span: list[int], cells: dict[int, list[Token]], text: str,
           region: _Region) -> Table:
    first, last = span

    def line_end(k: int) -> int:
        return (line_starts[k + 1] - 1) if k + 1 < len(line_starts) else len(src)

    head_end = line_starts[first + 2] if first + 2 < len(line_starts) else len(src)
    row_ends = tuple(base + line_end(k) for k in range(first + 2, last))
    rows = tuple(_row(text, base + line_starts[k], base + line_end(k), cells.get(k, []), region)
                 for k in range(first + 2, last))
    return Table(base + line_starts[first], base + head_end, row_ends, rows)


def _row(text: str, line: int, end: int, cells: list[Token], region: _Region) -> Row:
    """A body row from its line, its cells split as markdown-it's table rule splits them (a pipe after a
    backslash is text, the backslash dropped), each cell's inline structure collected into ``region``."""
    start = line + len(text[line:end]) - len(text[line:end].lstrip(" \t>"))
    start += len(text[start:end]) - len(text[start:end].lstrip(MD_TRIM_CHARS))
    stop = start + len(text[start:end].rstrip(MD_TRIM_CHARS))
    pipes = [p for p in range(start, stop) if text[p] == "|" and (p == start or text[p - 1] != "\\")]
    bounds = [start - 1, *pipes, stop]
    columns = list(zip(bounds, bounds[1:]))
    if pipes and pipes[0] == start:
        columns.pop(0)  # a pipe the row starts with opens its first cell
    if pipes and pipes[-1] == stop - 1:
        columns.pop()
    spans = []
    for a, b in columns:
        a += 1
        a += len(text[a:b]) - len(text[a:b].lstrip(MD_TRIM_CHARS))
        spans.append((a, a + len(text[a:b].strip(MD_TRIM_CHARS))))
    mapped = []
    for (a, b), tok in zip(spans, cells):
        # The table rule drops the backslash before each pipe in a cell: offsets in its content skip them.
        origins = [p for p in range(a, b) if not (text[p] == "\\" and p + 1 < b and text[p + 1] == "|")]
        if "".join(text[p] for p in origins) != tok.content:
            continue  # read otherwise: left uncut, as plain text is
        origins.append(b)
        _collect(tok.children or [], origins.__getitem__, text, region)
        mapped.append((a, b))
    label = text[spans[0][0]:spans[0][1]] if spans else ""
    return Row(start, end, label, tuple(p for p in pipes if p != start), tuple(mapped))


def _locator(src: str, base: int, line_starts: list[int], tok: Token) -> Callable[[int], int] | None:
    """Maps an offset in ``tok.content`` to one in the text, or None when the lines do not match."""
    lines = tok.content.split("\n")
    first = tok.map[0]  # type: ignore[index]
    content_starts, origins = [], []
    offset = 0
    for k, line in enumerate(lines):
        if first + k >= len(line_starts):
            return None
        a = line_starts[first + k]
        b = line_starts[first + k + 1] - 1 if first + k + 1 < len(line_starts) else len(src)
        # markdown-it reads a line ending "\r\n" as ending "\n": a line's own trailing spaces stay in its content.
        source = src[a:b].removesuffix("\r")
        if not source.endswith(line):
            source = source.rstrip()
            if not source.endswith(line):
                return None
        content_starts.append(offset)
        origins.append(base + a + len(source) - len(line))
        offset += len(line) + 1

    def locate(pos: int) -> int:
        k = bisect.bisect_right(content_starts, pos) - 1
        return origins[k] + pos - content_starts[k]

    return locate


def _collect(children: list[Token], locate: Callable[[int], int], text: str, region: _Region) -> None:
    closes = _matches(children)
    for i, tok in enumerate(children):
        if "range" in tok.meta:
            a, b = (locate(p) for p in tok.meta["range"])
            if tok.type == "code_inline":
                k = len(tok.markup)
                _add_style(region, text, a, a + k, b - k, b, tok.markup)
            elif b > a:
                region.atoms.append((a, b))
        elif tok.type == "text" and "pos" in tok.meta:  # a marker run's piece left as text: no style pairs it
            at = locate(tok.meta["pos"])
            region.literal.extend(range(at, at + len(tok.content)))
        elif tok.type in _CLOSE_OF and "pos" in tok.meta:
            close = children[closes[i]] if i in closes else None
            if close is None or "pos" not in close.meta:
                continue
            k = len(tok.markup)
            o, c = locate(tok.meta["pos"]), locate(close.meta["pos"])
            if tok.type == "s_open":
                _add_style(region, text, o, o + k, c, c + k, tok.markup)
            else:  # a strong pair's tokens are its second opening and first closing marker characters
                _add_style(region, text, o - k + 1, o + 1, c, c + k, tok.markup)


def _add_style(region: _Region, text: str, os: int, oe: int, cs: int, ce: int, marker: str) -> None:
    opener, closer = text[os:oe], text[cs:ce]
    if os < oe <= cs < ce and opener == closer == marker:
        region.styles.append(Style(os, oe, cs, ce, opener, closer))


def _matches(children: list[Token]) -> dict[int, int]:
    """Each style opening token's index mapped to its closing token's, in one pass: styles of one
    kind nest, though strikethrough and emphasis may overlap (scanning for each closing token was
    quadratic in the nesting: 2 s for ``"*" * 4000``)."""
    open_of = {close: opening for opening, close in _CLOSE_OF.items()}
    stacks: dict[str, list[int]] = {kind: [] for kind in _CLOSE_OF}
    matches = {}
    for i, tok in enumerate(children):
        if tok.type in stacks:
            stacks[tok.type].append(i)
        elif tok.type in open_of and stacks[open_of[tok.type]]:
            matches[stacks[open_of[tok.type]].pop()] = i
    return matches
