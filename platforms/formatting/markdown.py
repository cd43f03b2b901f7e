"""The Markdown the agent writes, as Switchboard reads it, and the walk every platform renderer shares.

Dialect: CommonMark plus GFM tables and ``~~strikethrough~~``, parsed by markdown-it-py, its
style markers beside Chinese, Japanese and Korean read as the CJK-friendly amendment reads them (`flanking`);
a bare ``http(s)://`` address is a link written as itself, its characters never Markdown
(`bare_urls`).
Raw HTML is text (an agent's ``<b>`` is shown, never interpreted), and links with
unsafe schemes (``javascript:``...) stay text, as markdown-it validates them.

`Renderer.render` walks the token stream; a subclass says how each construct
looks on its platform (`text`, `style`, `code_span`, `link`, `code_block`,
`quote`...). What every platform shares is decided here:

- paragraphs are separated by a blank line; a tight list's items by one line break;
- list items get a marker (``•`` or the number) and their continuation lines are
  indented under the item's text;
- tables become code blocks on every platform (no chat platform draws tables):
  `table_text` lays the cells' text out in aligned columns, a link as its label
  followed by its target in brackets (`cell_text`); one too wide for a phone is a list
  per row instead, and a ``<br>`` in a cell is a line break (`tables`);
- images become links to the image, labelled with their alt text;
- a link's label holds no link: an image in it (a badge, ``[![build](b.svg)](https://ci)``) is its
  alt text, an autolink its address as text; no platform nests links (Slack's ``<url|label>``
  would end at the inner one's ``>``, Discord's ``[label](url)`` at its ``]``);
- a style within one of its own kind is left plain (bold within bold is bold already; Slack's bold
  holds no bold, and Discord's ``**`` within ``**`` ends it), so the walk nests at most three
  styles deep: markdown-it nests blocks and links no deeper than its ``maxNesting`` (20), but
  pairs emphasis markers without a bound, and ``"*" * 2000 + "a" + "*" * 2000`` is a thousand
  styles deep;
- quotes and lists nested twenty deep, whose innermost lines markdown-it drops (its
  ``maxNesting``), are shown as written, their run of blocks one paragraph of plain text;
- a text the walk fails on all the same is rendered as plain text, shown as written
  (`Renderer.render`), so a reply is never held up by its rendering; so is a text that
  would show nothing rendered but something as written (only an empty code block, ``[]()``),
  which Telegram and Discord would refuse as empty.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import NamedTuple

from markdown_it import MarkdownIt
from markdown_it.token import Token

from platforms.formatting import bare_urls, blocks, flanking, inline_lines, tables
from platforms.formatting.blank import is_blank
from platforms.formatting.columns import width
from platforms.formatting.tables import table_text

log = logging.getLogger("platforms.formatting")

RULE = "─" * 10
_CONTAINERS = frozenset({"blockquote_open", "bullet_list_open", "ordered_list_open", "list_item_open"})
"""A quote or list opened at markdown-it's ``maxNesting`` less one holds nothing, its lines dropped
(``"> " * 21 + "a"`` parses as quotes only), so a run with one is shown as written."""
_STYLE_OPENS = {"strong_open": "strong", "em_open": "em", "s_open": "strike"}
_AUTO = ("autolink", bare_urls.MARKUP)
"""Link markups of an address written as itself: ``<https://…>`` and a bare URL."""
_LANGUAGE = re.compile(r"[^A-Za-z0-9_+#.-]")


@lru_cache(maxsize=1)
def parser() -> MarkdownIt:
    """The one configured parser (its rules are read-only once built; parsing is reentrant), used
    from several threads at once (replies are split in worker threads, the loop renders too)."""
    md = flanking.enable(MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"]))
    md = tables.enable(tables.keep_extra_cells(bare_urls.enable(md)))
    # Each rule chain is compiled now, not at its first use, which empties then fills a dict that
    # another thread's parse may read meanwhile, finding no rules.
    for ruler in (md.core.ruler, md.block.ruler, md.inline.ruler, md.inline.ruler2):
        ruler.getRules("")
    return md


@lru_cache(maxsize=1)
def _block_parser() -> MarkdownIt:
    """`parser` without its inline rules: what finds a text's link reference definitions (a block
    rule) for a fraction of a whole parse."""
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"]).disable("inline")
    tables.keep_extra_cells(md)
    for ruler in (md.core.ruler, md.block.ruler):  # compiled now, as `parser`'s are
        ruler.getRules("")
    return md


Definitions = tuple[tuple[str, str, str], ...]
"""Link reference definitions: (label as markdown-it keys it, address, title), the first of a label first."""


def definitions(markdown: str) -> Definitions:
    """The link reference definitions of ``markdown``; they apply to the links of the whole text.

    Found a run of blocks at a time (`blocks.chunks`: no definition spans two), each run's
    remembered: the splitter asks for those of candidate parts that differ only in their last run."""
    if "]:" not in markdown:
        return ()
    found: dict[str, tuple[str, str, str]] = {}
    for run in blocks.chunks(markdown):
        for definition in _run_definitions(run) if "]:" in run else ():
            found.setdefault(definition[0], definition)
    return tuple(found.values())


@lru_cache(maxsize=1024)
def _run_definitions(run: str) -> Definitions:
    env: dict[str, dict[str, dict[str, str]]] = {}
    _block_parser().parse(run, env)
    return tuple((label, ref["href"], ref.get("title") or "") for label, ref in env.get("references", {}).items())


def _used(run: str, refs: Definitions) -> Definitions:
    """The ``refs`` whose labels ``run`` may use: a run is rendered, and remembered, once for the
    definitions its links read, however many other ones the text has."""
    if not refs or "[" not in run:
        return ()
    labels = inline_lines.labels(run)
    return tuple(ref for ref in refs if ref[0] in labels)


def block_tokens(markdown: str) -> list[Token]:
    """``markdown``'s block tokens, their inline content left unparsed: where its blocks lie, for a
    fraction of a whole parse."""
    return _block_parser().parse(markdown, {})


def parse(markdown: str, references: Definitions = ()) -> list[Token]:
    """``markdown``'s tokens, its links also reading ``references`` (defined elsewhere in a text).

    A renderer reads a table's cells again from their source (`_table_cells`), so a cell's inline token
    carries the definitions its links read in ``meta["references"]``, as `_parse_by_lines`'s do: else a
    cell's ``[ref]`` would read as typed where the text defines it."""
    env = _env(references)
    tokens = parser().parse(markdown, env)  # which adds the text's own definitions to env
    for n, tok in enumerate(tokens):
        if tok.type == "inline" and n and tokens[n - 1].type in ("th_open", "td_open"):
            tok.meta["references"] = env["references"]
    return tokens


def _parse_by_lines(markdown: str, references: Definitions) -> list[Token]:
    """`parse`, but every inline token is left unparsed, the definitions its links read in
    ``meta["references"]``: a renderer parses and renders a paragraph's or a heading's content a piece of
    lines at a time (`inline_lines`), each piece remembered (`Renderer._inline_of`), as the splitter's
    candidates end further and further on in one long block; and a table's cells one at a time, each
    remembered (`Renderer._table`), as its candidates end a row further on in one long table."""
    env = _env(references)
    tokens = _block_parser().parse(markdown, env)  # which adds the text's own definitions to env
    for tok in tokens:
        if tok.type == "inline":
            tok.meta["references"] = env["references"]
    return tokens


def _env(references: Definitions) -> dict[str, dict[str, dict[str, str]]]:
    return {"references": {label: {"href": href, "title": title} for label, href, title in references}}


def language(info: str) -> str:
    """The language of a fence's info string, reduced to characters safe in any markup."""
    word = info.strip().split(maxsplit=1)[0] if info.strip() else ""
    return _LANGUAGE.sub("", word)[:32]


def plain(children: Sequence[Token]) -> str:
    """What a reader sees of inline tokens with every style removed."""
    out = []
    for tok in children:
        if tok.type in ("text", "code_inline", "html_inline"):
            out.append(tok.content)
        elif tok.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif tok.type == "image":
            out.append(plain(tok.children or ()) or tok.attrGet("src") or "")
    return "".join(out)


def cell_text(children: Sequence[Token]) -> str:
    """A table cell's text: `plain`, with the target of each link and image written after its
    label, since the code block a table becomes holds no link (a bare URL stays as it is)."""
    out = []
    i = 0
    while i < len(children):
        tok = children[i]
        if tok.type == "link_open":
            j = closing(children, i)
            label, href = plain(children[i + 1:j]), str(tok.attrGet("href") or "")
            out.append(label if tok.markup in _AUTO or not href or label == href else f"{label} ({href})")
            i = j
        elif tok.type == "image":
            alt, src = plain(tok.children or ()), str(tok.attrGet("src") or "")
            out.append(f"{alt} ({src})" if alt and src and alt != src else alt or src)
        else:
            out.append(plain((tok,)))
        i += 1
    return "".join(out)


def closing(tokens: Sequence[Token], i: int) -> int:
    """The index of the token closing the one opened at ``i``."""
    depth = 0
    for j in range(i, len(tokens)):
        depth += tokens[j].nesting
        if depth == 0:
            return j
    return len(tokens) - 1


class _Cell(NamedTuple):
    """A table cell as written, and the link definitions its links may use: what its text and its rendering
    are remembered by (`_cell_text`, `_list_line`), so a table's rows are rendered once, not once for each
    of the splitter's candidates that holds them. (A tuple: made, hashed and compared thousands of times for
    each candidate.)"""

    source: str
    references: Definitions

    @property
    def tokens(self) -> list[Token]:
        """Its inline tokens (a ``<br>`` a line break: `tables.enable`)."""
        return parser().parseInline(self.source, tables.cell_env(_env(self.references)))[0].children or []


def _table_cells(tokens: Sequence[Token], i: int, end: int) -> tuple[list[list[_Cell]], list[str]]:
    """A table's cells (left unparsed by `_parse_by_lines`), and its columns' alignments."""
    rows: list[list[_Cell]] = []
    aligns: list[str] = []
    refs: Definitions | None = None
    for j in range(i, end):
        tok = tokens[j]
        if tok.type == "tr_open":
            rows.append([])
        elif tok.type in ("th_open", "td_open"):
            inline = tokens[j + 1]
            if refs is None:  # every cell reads the same definitions: listed once for the table
                found = inline.meta.get("references") or {}
                refs = tuple((label, ref["href"], ref.get("title") or "") for label, ref in found.items())
            rows[-1].append(_Cell(inline.content, _used(inline.content, refs)))
            if len(rows) == 1:
                style = str(tok.attrGet("style") or "")
                aligns.append(style.removeprefix("text-align:"))
    return rows, aligns


@dataclass(frozen=True, slots=True)
class Context:
    """Where the walk is: renderers shape a construct differently inside a quote, a link or a heading."""

    quote: bool = False
    link: bool = False
    heading: bool = False
    depth: int = 0
    """How many lists enclose this point."""
    styles: frozenset[str] = frozenset()
    """The styles enclosing this point (``strong``, ``em``, ``strike``)."""


class Renderer:
    """Markdown to one platform's markup; see the module docstring. Stateless: share one."""

    bullet = "•"

    def render(self, markdown: str) -> str:
        """The text rendered a run of blocks (or of a list's items) at a time (`blocks.runs`), each
        run but the last remembered: the splitter renders the same runs again and again as it tries
        where to cut, each candidate part ending somewhere else in its last one; and a paragraph's
        (or heading's) content a piece of lines at a time, each piece remembered (`_parse_by_lines`).

        Never raises: should the walk fail on some text, that text is rendered as one paragraph of
        plain text (its Markdown shown as written) and the failure logged, without the text: an
        error here would reach the outbox as a failed send, retried for an hour."""
        try:
            rendered = self._render(markdown)
            if is_blank(self.shown(rendered)) and not is_blank(markdown):
                # Only an empty code block, say: the platform would refuse it as empty, or show nothing.
                return self._as_written(markdown).strip("\n")
            return rendered
        except Exception as exc:  # any bug in a walk must not stop a reply
            log.warning("rendering %d characters for %s failed (%s); sent as plain text", len(markdown),
                        type(self).__name__, type(exc).__name__)
            return self._as_written(markdown).strip("\n")

    def _as_written(self, markdown: str) -> str:
        """``markdown`` as one paragraph of text, its Markdown shown as typed."""
        return self.paragraph(self.text(markdown, Context()), Context())

    def _render(self, markdown: str) -> str:
        # A definition anywhere applies to the links of every run: each run reads those its links may
        # use (`_used`), so it is remembered once whatever the others are.
        refs = definitions(markdown)
        runs = blocks.runs(markdown)
        parts: list[str] = []
        loose = False
        for i, run in enumerate(runs):
            if not run.continues:  # a list runs on in the runs that continue it: loose as a whole, or not
                loose = run.loose if run.loose is not None else _list_reads_loose(runs, i)
            number = run.number if run.continues else None
            rendered = None if loose is None else (
                _top_level(self, run.text, _used(run.text, refs), number, loose)
                if i < len(runs) - 1 and len(run.text) <= _CACHED_RUN else self._run(run.text, refs, number, loose))
            if rendered is None:  # a loose list's run it cannot render as the whole list's: render it whole
                parts = self._run(markdown, refs) or []
                break
            _join(parts, rendered, run.continues, loose)
        return "\n\n".join(p for p in parts if p).strip("\n")

    def _run(self, run: str, refs: Definitions = (), number: int | None = None,
             loose: bool = False) -> list[str] | None:
        """A run's top-level blocks, each rendered (a paragraph at the top level is never a tight
        list's, so they are always joined by a blank line); its links read ``refs`` too. ``number``:
        that of its first item, when it starts with a later item of a numbered list; ``loose``: the
        list it starts with is loose as a whole (`blocks.Run`). None when that list has no item
        holding a paragraph: how a loose list's items are joined then depends on the others'."""
        tokens = _parse_by_lines(run, refs)
        deepest = parser().options["maxNesting"] - 1
        if any(t.level >= deepest and t.type in _CONTAINERS for t in tokens):
            return [self._as_written(run)]  # markdown-it dropped what the deepest container holds
        if number is not None and tokens and tokens[0].type == "ordered_list_open":
            tokens[0].attrSet("start", number)
        if loose and not _loosened(tokens):
            return None
        return self._block_parts(tokens, 0, len(tokens), Context())[0]

    # -- what a platform decides -------------------------------------------------------

    def shown(self, rendered: str) -> str:
        """What the platform shows of ``rendered`` (its markup removed)."""
        return rendered

    def text(self, text: str, ctx: Context) -> str:
        return text

    def style(self, kind: str, inner: str, ctx: Context) -> str:
        """``kind`` is ``strong``, ``em`` or ``strike``."""
        return inner

    def code_span(self, code: str, ctx: Context) -> str:
        return code

    def link(self, href: str, inner: str, label: str, ctx: Context, *, auto: bool) -> str:
        """``inner`` is the rendered label, ``label`` its plain text; ``auto``: written as a bare URL."""
        return inner if auto else f"{inner} ({href})"

    def image(self, src: str, alt: str, ctx: Context) -> str:
        return self.link(src, self.text(alt or src, ctx), alt or src, ctx, auto=not alt)

    def paragraph(self, inline: str, ctx: Context) -> str:
        return inline

    def line_break(self, ctx: Context) -> str:
        return "\n"

    def heading(self, level: int, inner: str, ctx: Context) -> str:
        return inner

    def code_block(self, code: str, lang: str, ctx: Context) -> str:
        return code

    def quote(self, inner: str, ctx: Context) -> str:
        """A quotation; ``ctx.quote`` is true when it sits inside another one."""
        return inner

    def rule(self, ctx: Context) -> str:
        return RULE

    def list_item(self, marker: str, inner: str, ctx: Context) -> str:
        pad = " " * (width(marker) + 1)
        first, *rest = inner.split("\n")
        return "\n".join([f"{marker} {first}", *(pad + line if line else line for line in rest)])

    def table(self, rows: list[list[str]], aligns: list[str], ctx: Context) -> str:
        return self.code_block(table_text(rows, aligns), "", ctx)

    # -- the walk ------------------------------------------------------------------------

    def _blocks(self, tokens: Sequence[Token], i: int, end: int, ctx: Context) -> str:
        parts, tight = self._block_parts(tokens, i, end, ctx)
        return ("\n" if tight else "\n\n").join(p for p in parts if p)

    def _block_parts(self, tokens: Sequence[Token], i: int, end: int, ctx: Context) -> tuple[list[str], bool]:
        """Each block rendered, and whether they belong to a tight list (joined by one line break)."""
        parts: list[str] = []
        tight = False
        while i < end:
            tok = tokens[i]
            kind = tok.type
            if kind == "paragraph_open":
                parts.append(self.paragraph(self._inline_of(tokens[i + 1], ctx), ctx))
                tight = tight or tok.hidden  # hidden paragraphs belong to a tight list
                i += 3
            elif kind == "heading_open":
                inline = self._inline_of(tokens[i + 1], replace(ctx, heading=True))
                parts.append(self.heading(int(tok.tag[1:]), inline, ctx))
                i += 3
            elif kind in ("fence", "code_block"):
                parts.append(self.code_block(tok.content.removesuffix("\n"), language(tok.info), ctx))
                i += 1
            elif kind == "hr":
                parts.append(self.rule(ctx))
                i += 1
            elif kind == "blockquote_open":
                j = closing(tokens, i)
                parts.append(self.quote(self._blocks(tokens, i + 1, j, replace(ctx, quote=True)), ctx))
                i = j + 1
            elif kind in ("bullet_list_open", "ordered_list_open"):
                j = closing(tokens, i)
                parts.append(self._list(tokens, i, j, ctx))
                i = j + 1
            elif kind == "table_open":
                j = closing(tokens, i)
                parts.append(self._table(tokens, i, j, ctx))
                i = j + 1
            else:
                i += 1
        return parts, tight

    def _table(self, tokens: Sequence[Token], i: int, end: int, ctx: Context) -> str:
        rows, aligns = _table_cells(tokens, i, end)
        # Read a row at a time, a header too wide tells without the body's text (a list per row has no use for it).
        texts = ([_cell_text(cell) for cell in row] for row in rows)
        if len(rows) > 1 and len(rows[0]) > 1 and tables.too_wide(texts, aligns):
            return self._table_list(rows, ctx)
        return self.table([[_cell_text(cell) for cell in row] for row in rows], aligns, ctx)

    def _table_list(self, rows: Sequence[Sequence[_Cell]], ctx: Context) -> str:
        """A table too wide for a phone (`tables`), a row at a time: its first cell in bold, then an item
        ``header: value`` for each other cell that holds something; its links are links, its styles styles.
        Each cell's line is remembered (`_list_line`)."""
        headers = [" ".join(_cell_text(cell).split()) for cell in rows[0]]
        parts = []
        for row in rows[1:]:
            lines = [_list_line(self, None, row[0], ctx)] if row else []
            lines += [_list_line(self, header, cell, ctx) for header, cell in zip(headers[1:], row[1:])]
            parts.append("\n".join(line for line in lines if line))
        return "\n\n".join(p for p in parts if p)

    def _list_line(self, header: str | None, cell: _Cell, ctx: Context) -> str:
        """A cell's line in `_table_list`: a row's first cell (``header`` None) in bold, another an item
        ``header: value``; nothing for a cell that holds nothing."""
        tokens = cell.tokens
        if is_blank(cell_text(tokens)):
            return ""
        if header is None:
            bold = replace(ctx, styles=ctx.styles | {"strong"})
            return self.paragraph(self.style("strong", self._inline(tokens, bold), ctx), ctx)
        label = self.text(f"{header}: ", ctx) if header else ""
        return self.list_item(self.bullet, self.paragraph(label + self._inline(tokens, ctx), ctx), ctx)

    def _list(self, tokens: Sequence[Token], i: int, end: int, ctx: Context) -> str:
        ordered = tokens[i].type == "ordered_list_open"
        number = int(tokens[i].attrGet("start") or 1)
        inner_ctx = replace(ctx, depth=ctx.depth + 1)
        items: list[str] = []
        loose = False
        k = i + 1
        while k < end:
            if tokens[k].type != "list_item_open":
                k += 1
                continue
            close = closing(tokens, k)
            marker = f"{number}." if ordered else self.bullet
            items.append(self.list_item(marker, self._blocks(tokens, k + 1, close, inner_ctx), ctx))
            loose = loose or any(t.type == "paragraph_open" and not t.hidden and t.level == tokens[k].level + 1
                                 for t in tokens[k + 1:close])  # fmt: skip
            number += 1
            k = close + 1
        return ("\n\n" if loose else "\n").join(items)

    def _inline_of(self, inline: Token, ctx: Context) -> str:
        """A paragraph's or heading's inline token rendered; left unparsed (`_parse_by_lines`), a piece
        at a time, each piece's remembered, joined by the line break between them: nothing else goes on
        past one."""
        references = inline.meta.get("references")
        if references is None:  # tokens of `parse`
            return self._inline(inline.children or (), ctx)
        pieces = inline_lines.pieces(parser(), inline.content, references)
        return self.line_break(ctx).join(_piece(self, piece, ctx) for piece in pieces)

    def _inline(self, children: Sequence[Token], ctx: Context) -> str:
        out: list[str] = []
        i = 0
        while i < len(children):
            tok = children[i]
            kind = tok.type
            if kind in ("text", "html_inline"):
                out.append(self.text(tok.content, ctx))
            elif kind == "code_inline":
                out.append(self.code_span(tok.content, ctx))
            elif kind in ("softbreak", "hardbreak"):
                out.append(self.line_break(ctx))
            elif kind in _STYLE_OPENS:
                j = closing(children, i)
                name, inner = _STYLE_OPENS[kind], children[i + 1:j]
                if name in ctx.styles:
                    # Its kind's markers within are dropped too, so the walk never recurses into it again.
                    same = (kind, kind.replace("_open", "_close"))
                    out.append(self._inline([t for t in inner if t.type not in same], ctx))
                else:
                    out.append(self.style(name, self._inline(inner, replace(ctx, styles=ctx.styles | {name})), ctx))
                i = j
            elif kind == "link_open":
                j = closing(children, i)
                inner = children[i + 1:j]
                href = str(tok.attrGet("href") or "")
                if ctx.link:  # an autolink in a link's label (markdown-it allows it): its text
                    out.append(self._inline(inner, ctx))
                else:
                    out.append(self.link(href, self._inline(inner, replace(ctx, link=True)), plain(inner), ctx,
                                         auto=tok.markup in _AUTO))
                i = j
            elif kind == "image":
                alt = plain(tok.children or ())
                # A badge, ``[![build](badge.svg)](ci)``: the image is its alt text, the outer link's label.
                out.append(self.text(alt, ctx) if ctx.link else self.image(str(tok.attrGet("src") or ""), alt, ctx))
            i += 1
        return "".join(out)


_CACHED_RUN = 16_000
"""Longer runs (a huge code block) are rendered each time: no part holds one, and the cache stays small."""


@lru_cache(maxsize=1024)
def _top_level(renderer: Renderer, run: str, refs: Definitions, number: int | None,
               loose: bool) -> tuple[str, ...] | None:
    parts = renderer._run(run, refs, number, loose)
    return None if parts is None else tuple(parts)


@lru_cache(maxsize=2048)
def _piece(renderer: Renderer, piece: inline_lines.Piece, ctx: Context) -> str:
    return renderer._inline(piece.tokens, ctx)


_CACHED_CELLS = 8192
"""More than a part's cells, as a rule (each takes two characters or more): a candidate's table finds every row but
its last remembered; a cell's tokens are not kept, only its text and rendering (`inline_lines` says why)."""


_CACHED_CELL = 2_000
"""Longer cells are read and rendered each time: a table's cells are short as a rule, and 8,192 cells of a
model's long notes kept across messages would hold megabytes."""


def _cell_text(cell: _Cell) -> str:
    return cell_text(cell.tokens) if len(cell.source) > _CACHED_CELL else _remembered_cell_text(cell)


@lru_cache(maxsize=_CACHED_CELLS)
def _remembered_cell_text(cell: _Cell) -> str:
    return cell_text(cell.tokens)


def _list_line(renderer: Renderer, header: str | None, cell: _Cell, ctx: Context) -> str:
    if len(cell.source) > _CACHED_CELL:
        return renderer._list_line(header, cell, ctx)
    return _remembered_list_line(renderer, header, cell, ctx)


@lru_cache(maxsize=_CACHED_CELLS)
def _remembered_list_line(renderer: Renderer, header: str | None, cell: _Cell, ctx: Context) -> str:
    return renderer._list_line(header, cell, ctx)


def _join(parts: list[str], run: Sequence[str], continues: bool, loose: bool) -> None:
    """``run``'s blocks after ``parts``; its first, if it ``continues`` the list the last of
    ``parts`` is, joined to that one as the list's items are: by a line break, a blank line if loose."""
    if continues and parts and run:
        parts[-1] += ("\n\n" if loose else "\n") + run[0]
        parts.extend(run[1:])
    else:
        parts.extend(run)


def _list_reads_loose(runs: Sequence[blocks.Run], first: int) -> bool | None:
    """The list ``runs[first]`` starts with is loose: one of its runs (that one and those that
    continue it) reads loose alone; None if that cannot be told."""
    end = next((i for i in range(first + 1, len(runs)) if not runs[i].continues), len(runs))
    read = [_reads_loose(run.text) for run in runs[first:end]]
    return None if None in read else any(read)


@lru_cache(maxsize=1024)
def _reads_loose(run: str) -> bool | None:
    """markdown-it reads the list ``run`` starts with, alone, as loose: in one of its items, a blank line
    before a block (not the first) that item holds. (A loose list's paragraphs are shown, a tight
    one's hidden; with no paragraph in the list, that cannot tell.) None if it may hold a link
    reference definition, a block that leaves no token to tell where it is."""
    if "]:" in run:
        return None
    tokens = block_tokens(run)
    if not tokens or tokens[0].type not in ("bullet_list_open", "ordered_list_open"):
        return False
    lines = run.split("\n")
    first = True  # the next block is an item's first
    for tok in tokens[1:closing(tokens, 0)]:
        if tok.level == 1:
            first = True
        elif tok.level == 2 and tok.nesting != -1 and tok.map is not None:
            if not first and not lines[tok.map[0] - 1].strip():
                return True
            first = False
    return False


def _loosened(tokens: list[Token]) -> bool:
    """The list ``tokens`` start with made loose, as markdown-it reads a loose list: its items'
    paragraphs shown (a tight list's are hidden). False, leaving it, if no item of it holds a paragraph."""
    if not tokens or tokens[0].type not in ("bullet_list_open", "ordered_list_open"):
        return False
    end = closing(tokens, 0)
    paragraphs = [t for t in tokens[1:end] if t.level == 2 and t.type in ("paragraph_open", "paragraph_close")]
    if not paragraphs:
        return False
    for t in paragraphs:
        t.hidden = False
    return True
