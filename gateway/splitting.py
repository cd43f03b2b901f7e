"""Splitting a Markdown message to a platform's length limit.

The outbox splits the agent's Markdown *before* an adapter renders it; each part
is rendered on its own when it is sent, so every part must be whole Markdown.
The limit is measured with the adapter's ``measure``, which counts what the
platform counts *after* rendering (Telegram: UTF-16 units of the text once the
HTML is parsed; Discord: characters of the rendered content; Slack: characters
of the mrkdwn), so a part that fits here fits there.

`split_text` cuts where a reader would: at a paragraph break, else a line break,
else, in the last quarter of what a part can hold, after the end of a Chinese or Japanese sentence or clause
(``。！？；`` and the closing quotes or brackets right after it) or at an ideographic space (``　``), as such
prose puts no spaces between its words, else a space, else between two characters as a reader sees them (never
inside a grapheme cluster — a flag, an emoji with a skin tone or zero-width joiners, a letter
and its combining marks: `gateway.graphemes` — nor between the two halves of a UTF-16
surrogate pair; only a cluster longer than a whole part is cut between its code
points). What a cut never breaks:

- **code fences** (``` or ~~~): a cut inside one closes the fence at the end of
  the part and reopens it, with the same info string (the language) and
  indentation, at the start of the next, so every part renders as code on its own;
  one in a quote, or opened on a list item's marker line, is reopened there, one in
  a nested list item in the first column (`gateway.split_fences`); a part of only empty
  code blocks (one the part before had no room for, or a block's blank last lines and its
  close) is left out: it shows nothing, and alone a renderer sends it as typed (a text of
  nothing else is sent so, in parts, as a renderer sends one that fits: left out, it vanished);
- **indented code** (four spaces in, at the top level): a part starting inside it starts
  at its line's indentation, and one cut inside a line is indented as code again, so the
  rest stays code rather than becoming a paragraph;
- **inline styles** (bold, italic, strikethrough, inline code): a style open at a
  cut is closed at the end of the part and reopened at the start of the next, and
  no cut falls inside a marker; unless the markers to close (or to reopen) would
  take more than a quarter of the limit (hundreds of styles open at once): then
  the part closes (or reopens) none, so every part keeps most of the limit for text; the ``*``, ``_``
  and ``~`` the text shows as typed (no style pairs them) that a part starts or ends with are escaped
  where they would join the markers reopened (or closed) there, or the cut falls within a word:
  ``**`` + ``** **`` would read ``****``, ``_i_`` cut from ``_i_https`` an italic, ``~~`` + ``~10`` a code
  fence (a lone ``~`` too), as would ``~~`` reopened before the ``~~`` of a strikethrough nested in it (the part
  starts past that ``~~``, and a closer's spaces), or both reopened (``~~~~``): a part starting inside (or at) a
  strikethrough nested in one (under a bold one too, ``**~~`` + ``~~``) reopens the outer one alone and leaves out the
  nested one's ``~~`` (struck all the same, `_reopening`); one ending inside both that opened the nested one leaves
  out its opening ``~~``, closing the outer one alone (and its closing one, ending right after it: ``~~~~``); a part
  given up on as
  plain text (an address longer than a part, a piece of which keeps its line's quote markers, and leaves one of its
  characters to the punctuation glued after it) that opened styles before the address ends in it, closing them,
  not in or right before their closing markers (``_`` + ``_`` alone), nor before an autolink's ``>``
  (`_closed_in_atom`); inline code a part could hold whole is cut only where the part has no line break to end at
  (`choose_cut`);
- **links (reference links too), bare URLs, images, escapes and entities**, which are kept whole; a
  link or image longer than a part (or than a part with its line's quote markers and the text glued after it, the
  ``)`` of ``(see [docs](…))``, that alone would make a part of its own) is cut in its label (at a space where it
  can) into links (images) to the same address, like a style, and one whose address takes more than a quarter of
  the limit is written out as its label and its address (`_unlinked`; a backslash before a label that would open
  a block at a line's start, ``[>](…)``): cut otherwise, a part would show its Markdown; a part holding a bare
  address whole up to its end, and only what is glued before it, ends before it where the next can hold it with the
  punctuation glued after it (`_short_of_glued`), and one ending at a space before punctuation glued to an atom that
  the next part holds only without it takes that punctuation along (``see (`` + ``https://…``, not ``(`` alone:
  `_past_glued`); one a part holds with the punctuation around it, but not with the markers of the styles around
  them (``**([site](…))**``), goes in a part without those markers rather than leave a part of only ``**(**``, or
  the next starting with ``)``, or be cut (`_unstyled`);
- **tables** (at the top level or in a quote), cut only between body rows; the next part repeats the
  header rows; a row no part can hold is cut after a pipe between cells, else between words of a cell
  (`_row_cut`), and the next part goes on with a row of its own under the row's first cell (`_row_head`); a table
  whose header and delimiter rows no part can hold is written as text (`_untabled`), cut as a paragraph;
- **list items**: a part starting inside one (past its marker) has none, so the item's
  later lines are taken out as far as its text, and a blank line goes before the next item
  when it could not open a list right after that text (`gateway.split_items`). Items in a
  quote are left as they are.
- **list numbers**: a part starting further down a numbered list writes its first item
  there with the number it is shown with (``4.`` for the fourth of ``1.``, ``1.``, ...), so
  every platform numbers on from it (`gateway.split_items`). A list in a quote keeps its
  numbers as written.
- **headings**: no cut right after a word of ``#`` in one (``C #`` of ``## C # and F #``): the part's
  heading would end with it, read as its closing sequence, not shown; a heading's closing sequence (`` #`` of
  ``## C #``) is left out of a part that starts within its line (no heading there, it would show it) and is no
  part of its own (``\\#``) (`closing_sequence`); none between a setext heading's text
  and its ``===`` (``---``) line, nor after a line's ``===`` or ``---`` its text goes on from (the part would
  end with a heading's underline, or a rule);
- **a line's markers**: no cut right after a list item's (or a quote's) markers on a line whose text goes
  on, where the part holds the line break before them (``- [l](https://x.org/a)`` longer than the room left):
  the part would end with an empty bullet, and the next part's text would be out of the item; nor a part of
  only those markers, or of those and a style's opening ones (``- **``), before text longer than a part: the
  text is cut instead, the markers going with it, and the styles it opened closed (`_closed_in_atom`);
- **a line's text**: a part starting within a line with what would open a block at a
  line's start (the ``> 5`` of ``x > 5``, a bullet's ``- ``, a heading's ``# ``, a rule, a
  fence, a link definition) starts with a backslash before it, so the rest stays text; a number's
  (``2019. `` or ``1) ``, a numbered item) goes before its ``.`` or ``)``.
- **quotes**: a part starting within a quoted line's text starts with the line's quote markers
  (``> > ``; an item's marker left out, as above), so the rest of the line stays in the quote; one
  starting at a quoted line's ``>`` reopens the styles (and link label) open there after its quote
  markers, where they still open them: before them, ``~~> more`` is no quote and shows its ``>``.

Whitespace at a cut is dropped (inside code, the indentation of the next line is
kept); so is a list item's lines', and a quoted line's before the styles reopened on it, and a
blank line, that backslash or a quote's markers may be added, backslashes before markers shown as
typed (and before the delimiter row of a table written as text), and list markers and links too long for a part
rewritten, as said, and a part of only empty code blocks left out, and the ``~~`` of a strikethrough nested
in one that a part reopens (or closes) alone, and the markers of the styles around a link or address a part holds
only without them; nothing else is added or removed.
Inline structure comes from markdown-it (`gateway.markdown_structure`), parsed only
when a text must be cut, and only the stretches where a cut is considered; where the
code blocks are from `gateway.split_fences`, and the list items from `gateway.split_items`
(what a part starting in them leaves out and rewrites: `gateway.split_in_lists`).

Cost: each part needs a handful of ``measure`` calls on text of about the part's
size (the search interpolates, so a measure proportional to the length converges
in two or three; Telegram's cap on formatted spans, which interpolation cannot
follow, about fifteen, on at most twice the last part's text), so a 100 KB text splits in
milliseconds with a cheap measure; a rendering one renders only the block a candidate ends in, or a list's item, the
renderer remembering the others (`platforms.formatting.blocks`), and of a paragraph only the lines it ends in
(`platforms.formatting.inline_lines`). A part starting in a table's body is searched a row at a time
(`_rows_held`), from as many rows as the last part held, the measure of the header rows it repeats remembered: cut
between rows anyway, and measured with a piece of a row it hardly grew (alone, a wide table's header is a code block,
which the rows' list replaces), so guesses ran to the table's end, rendered whole for each part; and a renderer
remembers each cell's text and rendering (`platforms.formatting.markdown`), so a candidate's rows cost only their
block parse. Each candidate is
measured as the part would be written (out of the list items it starts in), so it
is read, and cut into runs, as sent.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence

from markdown_it.helpers import parseLinkDestination, parseLinkLabel
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from gateway import link_references
from gateway.graphemes import is_boundary
from gateway.markdown_structure import Row, Structure, Style
from gateway.split_fences import Fence, indented_code, leaves_code_open, only_empty_code, outdented, scan_fences
from gateway.split_in_lists import InLists
from gateway.split_items import Item
from platforms.base import Adapter
from platforms.formatting import bare_urls, markdown
from platforms.formatting.blank import is_blank

Measure = Callable[[str], int]

# A line indented as code (four columns in): only a part starting in one can start inside indented code.
_INDENTED_LINE = re.compile(r"^(?: {4}| {0,3}\t)[ \t]*\S", re.MULTILINE)
_CODE_INDENT = "    "
# What opens a block at a line's start though it is text within a line: a quote, a bullet, a heading, a rule,
# a fence (a backtick one with no backtick after it, else a code span), a numbered item (its number a group).
_OPENS_BLOCK = re.compile(r">|[-+*](?:[ \t]|$)|#{1,6}(?:[ \t]|$)|([-*_])(?:[ \t]*\1){2,}[ \t]*$|`{3,}[^`\n]*$|~{3}"
                          r"|(\d{1,9})[.)](?:[ \t]|$)", re.MULTILINE)
# A line opening a heading with "#" (in quotes and list items too): only such a line can have a closing sequence.
_ATX_OPENS = re.compile(r"[ \t>]*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+[ \t>]*)*#{1,6}[ \t]")
# A heading line ending in a run of "#" after a space: CommonMark drops it as the heading's closing sequence.
_HEADING_CLOSED = re.compile(r"[ \t>]*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+[ \t>]*)*#{1,6}[ \t](?:.*[ \t])?#+")
# A line of a setext heading's underline (or, of "-", a rule), after any quote markers and indentation.
_UNDERLINE = re.compile(r"[ \t>]*(?:=+|-+)")
# What stands before a line's text: quote markers, list item markers, indentation.
_LINE_PREFIX = re.compile(r"[ \t>]*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+[ \t>]*)*")
# A quoted line's markers from a part's start (the ">"s up to the last), and the whitespace to its text.
_QUOTE_MARKERS = re.compile(r"([ \t>]*>)[ \t]*")
# The characters a line's markers end with (`_LINE_PREFIX`): only a cut after one can leave a bare marker.
_MARKER_ENDS = frozenset("-+*.)>")
_HALF = 2  # a structural cut is preferred only in the last 1/_HALF of the window; see choose_cut
# Where Chinese and Japanese prose may end a part: after a sentence's or clause's end, with the quotes and brackets
# closing there, or after ideographic spaces (dropped at the cut, as other whitespace).
_SENTENCE_END = re.compile(r"[。！？；][」』）】〕〗〙〛〉》”’]*|　+")
_SENTENCE_CLOSERS = 8  # closing quotes after a sentence's end looked at past the window: a cut takes them along
_SENTENCE_SHARE = 4  # a sentence's end is cut after only in the last 1/_SENTENCE_SHARE of the window
_RETRIES = 6  # cuts tried when added closing markers push a part over the limit
_JOINS_CLOSERS = "*_~\\"  # what an address cut ends with that would join the style markers closing it
# Style markers and punctuation around an atom, no word, no space: alone, a part of only those.
_SHOWN_AROUND = re.compile(r"(?:[^\w\s]|_)*")
_MARKER_SHARE = 4  # style markers closing or reopening styles at a cut take at most 1/_MARKER_SHARE of the limit
_REFERENCE_SHARE = 2  # the link definitions a part carries take at most 1/_REFERENCE_SHARE of it


def _is_pair(text: str, i: int) -> bool:
    """A high surrogate at i-1 and a low one at i: a cut at i would break one character."""
    return 0 < i < len(text) and "\ud800" <= text[i - 1] <= "\udbff" and "\udc00" <= text[i] <= "\udfff"


def _whole(text: str, i: int) -> bool:
    """A cut at i splits no character a reader sees: no surrogate pair, no grapheme cluster."""
    return not _is_pair(text, i) and is_boundary(text, i)


def _link_label(text: str, start: int, end: int) -> Style | None:
    """The inline link or image ``text[start:end]`` as a style its label opens (``[``, ``![``) and its
    target closes (``](href)``): one longer than a part is cut into links (images) to the same target."""
    bracket = start + 1 if text.startswith("![", start) else start
    if text[bracket] != "[":
        return None
    label_end = start + parseLinkLabel(StateInline(text[start:end], markdown.parser(), {}, []), bracket - start)
    if label_end <= bracket or text[label_end + 1:label_end + 2] != "(":
        return None
    return Style(start, bracket + 1, label_end, end, text[start:bracket + 1], text[label_end:end])


def _last_before(cuts: list[int], before: int) -> int:
    """The last of ``cuts`` (in order) before ``before``, or -1."""
    i = bisect.bisect_left(cuts, before)
    return cuts[i - 1] if i else -1


def _character_start(text: str, start: int, end: int) -> int:
    """The last cut after ``start`` and at or before ``end`` that splits no cluster; when one
    cluster fills the whole stretch (a letter under a pile of marks), ``end`` between code points."""
    for p in range(end, start, -1):
        if _whole(text, p):
            return p
    return end - 1 if _is_pair(text, end) else end


class _Splitter(InLists):
    def __init__(self, text: str, limit: int, measure: Measure):
        self.text, self.limit, self.measure = text, limit, measure
        self._tokens: list[Token] | None = None
        self.fences = scan_fences(text, self.block_tokens)
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
        self._items: list[Item] | None = None
        self._item_markers: list[int] = []
        self._item_at: dict[int, Item] = {}
        self._item_lines: dict[int, Item] | None = None
        self._line_starts: list[int] = []
        self._prefix_ends: dict[int, int] = {}
        """Where the line's markers (`_LINE_PREFIX`) from a position end: read once, not for every candidate cut."""
        self._underlines: frozenset[int] | None = None
        """Where the lines underlining setext headings start (`ends_before_underline`)."""
        self._atx_headings: frozenset[int] | None = None
        """Where the lines of headings written with ``#`` start (`closing_sequence`)."""
        self._last_window = limit
        """The text the last part could hold (`max_end`): the first guess for the next is at most twice it."""
        self._heads: dict[str, int] = {}
        """The measure of each head a part repeats alone (`_base`)."""

    def block_tokens(self) -> list[Token]:
        """The text's block tokens (`markdown.block_tokens`), parsed once for the scans that need them."""
        if self._tokens is None:
            self._tokens = markdown.block_tokens(self.text)
        return self._tokens

    @property
    def structure(self) -> Structure:
        if self._structure is None:
            self._structure = Structure(self.text, [(f.open_start, f.close_end) for f in self.fences],
                                        markdown.definitions(self.text))
        return self._structure

    # -- fences --------------------------------------------------------------------------

    def fence_before(self, pos: int) -> Fence | None:
        """The last fence opening before ``pos`` (fences never overlap)."""
        i = bisect.bisect_left(self._starts, pos) - 1
        return self.fences[i] if i >= 0 else None

    def inside(self, pos: int) -> Fence | None:
        """The fence whose body holds ``pos`` (a part starting here must reopen it)."""
        f = self.fence_before(pos)
        return f if f is not None and f.open_end < pos < f.close_start else None

    def in_code(self, pos: int) -> bool:
        """``pos`` lies within a fence, its marker lines included."""
        f = self.fence_before(pos + 1)
        return f is not None and f.open_start <= pos < f.close_end

    def open_at_end(self, end: int) -> Fence | None:
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
            self._indented = indented_code(self.text, self.block_tokens)
            self._indented_starts = [start for start, _ in self._indented]
        blocks, i = self._indented, bisect.bisect_right(self._indented_starts, pos) - 1
        return blocks[i] if i >= 0 and pos <= blocks[i][1] else None

    # -- what a part starting or ending somewhere needs --------------------------------------

    def head(self, start: int) -> tuple[str, int]:
        """What a part starting at ``start`` repeats: a fence's opening line, a table's header
        rows, or the markers of the styles open there; else a backslash it may need (`_escape`);
        after a quote's markers (`_quoted`). And where the part's text goes on from: past the quote
        markers the part starts with, when the head repeats them before the styles it reopens."""
        if start == 0:
            return "", start
        fence = self.inside(start)
        if fence is not None:
            if fence.contained and ">" in fence.indent and self.text[start - 1] != "\n":
                # Cut inside a line of a quote's code: the rest of the line is code only in the quote.
                return fence.reopen() + (fence.outermost if fence.nested else fence.indent), start
            return fence.reopen(), start
        if self.in_code(start):
            return "", start
        if self.indented_code_at(start) is not None and self.text[start - 1] != "\n":
            # Cut inside a line of indented code: the rest of it is code only indented as code.
            return _CODE_INDENT, start
        table = self.structure.table_at(start)
        if table is not None and start >= table.head_end:
            header = self.text[table.start:table.head_end]
            row = self.structure.row_at(start)
            return (header, start) if row is None else self._reopened(header + self._row_head(row, start), start)
        return self._reopened(None, start)

    def _reopened(self, row_head: str | None, start: int) -> tuple[str, int]:
        """`head` for a part starting outside code: ``row_head`` (in a table row; else the quote markers
        `_quoted` finds, or a backslash it may need), then the markers of the styles open at ``start``."""
        markers = self._reopening(start)[0]
        quote, text_from = (row_head, start) if row_head is not None else self._quoted(start, bool(markers))
        while markers.endswith("~~") and (past := self._past_nested_strike(text_from)) is not None:
            # At a nested strikethrough's "~~", after the outer one reopened alone: ``~~~~b``, a code fence. Not every
            # text has an end that avoids it (``~~a ~~b~~ ~~c~~``: each leaves one next), so the part starts past it
            # (and the spaces after a closer, which would leave the reopened "~~" opening nothing), struck all the
            # same, an opened one leaving out its closer too (`_reopening`).
            text_from = past
        literal = self.structure.literal_run(text_from)
        if markers.endswith("~") and literal == text_from:
            # A lone "~" marks nothing (a strikethrough takes two), so it is no literal marker; but after the "~~"
            # reopened, "~~~" would open a code fence at the part's start. Escaped up to a strikethrough's marker.
            while self.text[literal:literal + 1] == "~" and (not self.structure.splits_marker(literal + 1)
                                                               or self.structure.atom_at(literal + 1) is not None):
                literal += 1  # in an address cut (``~~`` + ``~user``) too
        if literal > text_from and (markers[-1:] == self.text[text_from] or not self.text[text_from - 1].isspace()):
            # Shown as typed in the text, they would join the markers reopened, or, no longer after a character
            # (``_https`` cut from ``_i_https``), may pair with one of their own: escaped (a ``* `` opens no list).
            return quote + markers + _escaped(self.text[text_from:literal]), literal
        if markers or row_head is not None:
            return quote + markers, text_from  # in a cell, what opens a block at a line's start is text
        escape, text_from = self._escape(start)
        return quote + escape, text_from

    def _reopening(self, start: int) -> tuple[str, list[Style]]:
        """The markers a part starting at ``start`` reopens, and the strikethroughs nested in the outermost style it
        reopens, itself one, that it reopens with that one alone: ``~~`` + ``~~`` at a line's start is ``~~~~``, a
        code fence. Struck all the same, the part leaves out their closing ``~~`` (`assemble`)."""
        styles = [s for s in self.with_cut_link(start, self.structure.styles_open_at(start)) if start < s.close_start]
        # Right inside another, under a bold one too (``**~~`` + ``~~``: ``**~~~~``, shown as typed).
        merged = _nested_strikes(styles)
        markers = self._carried("".join(s.opener for s in styles if s not in merged))
        return markers, merged if markers else []

    def _past_nested_strike(self, pos: int) -> int | None:
        """Past the ``~~`` at ``pos`` opening a strikethrough, or closing one nested in another still open (and the
        spaces after it); None if none is there."""
        if not self.text.startswith("~~", pos):
            return None
        if any(s.open_start == pos and s.opener == "~~" for s in self.structure.styles_open_at(pos + 2)):
            return pos + 2
        strikes = [s for s in self.structure.styles_open_at(pos) if s.opener == "~~"]
        if not any(s.close_start == pos for s in strikes) or not any(s.close_start > pos for s in strikes):
            return None
        pos += 2
        while self.text[pos:pos + 1] in (" ", "\t"):
            pos += 1
        return pos

    @staticmethod
    def _without(left_out: list[tuple[int, int]], start: int, end: int, piece: Callable[[int, int], str]) -> str:
        """``piece(start, end)`` (the part's text from ``start`` to ``end``) without the markers ``left_out`` (the
        closers of strikethroughs `_reopening` merged, the openers of those `assemble` closes with the outer one)
        that it holds."""
        out = []
        for a, b in sorted(left_out):
            if start <= a and b <= end:
                out.append(piece(start, a))
                start = b
        return "".join([*out, piece(start, end)])

    def _row_head(self, row: Row, start: int) -> str:
        """What a part starting inside a table row (one no part held) opens its rest with: a row of its own,
        the row's first cell repeated as its label (left empty if it would take more than a quarter of the
        limit), the cells the part before showed empty, so the rest stays in its column (`Row`)."""
        line = self.text.rfind("\n", 0, row.start) + 1
        column = bisect.bisect_left(row.edges, start)
        if column == 0:
            return self.text[line:row.start] + "| "
        label = row.first if len(row.first) <= self.limit // _MARKER_SHARE else ""
        return self.text[line:row.start] + "| " + " | ".join([label, *[""] * (column - 1)]) + " | "

    def _quoted(self, start: int, reopens: bool) -> tuple[str, int]:
        """The quote markers a part starting at ``start`` in a quoted line begins with, and where its text
        goes on from: within the line's text, the line's quotes (``> > ``), else the rest of the line would
        be no quote; at the line's ``>``, when the part reopens styles there, those markers as written,
        then the styles, and the text past the line's prefix (styles first, ``~~> more`` is no quote and
        shows its ``>``). Any list item's marker is left out, as a part starting inside an item has none."""
        text, line = self.text, self.text.rfind("\n", 0, start) + 1
        prefix_end = _LINE_PREFIX.match(text, line).end()  # type: ignore[union-attr]
        depth = text.count(">", line, prefix_end)
        if depth == 0:
            return "", start
        if start >= prefix_end:
            return "> " * depth, start
        written = _QUOTE_MARKERS.match(text, start)
        if not reopens or written is None:
            return "", start
        return written.group(1) + " ", written.end()

    def _escape(self, start: int) -> tuple[str, int]:
        """A backslash, for a part starting within a line's text with what would open a block at its start
        (``> 5`` of ``x > 5``, ``- b`` of ``a - b``, ``1) c`` of ``see 1) c``): cut, it would be read as a quote, a
        list..., and its marker shown as one or not at all; or a link definition (``[a]: x``), shown as nothing.
        With where the part's text goes on from: past a number, the backslash going before its ``.`` or ``)``."""
        text, line = self.text, self.text.rfind("\n", 0, start) + 1
        if _LINE_PREFIX.fullmatch(text, line, start):
            return "", start  # at the line's text (in its quote or list item): what it opens, the whole text opens too
        if text.startswith("[", start):
            end = text.find("\n", start)
            return "\\" if markdown.definitions(text[start:end if end != -1 else len(text)]) else "", start
        at = _block_escape(text, start)
        return ("", start) if at is None else (text[start:at] + "\\", at)

    def _carried(self, markers: str) -> str:
        """``markers`` if they leave the part most of the limit, else nothing: a thousand styles open at
        once (``"*" * 4000``) would leave each part a few characters, and a reply thousands of parts."""
        return markers if len(markers) <= self.limit // _MARKER_SHARE else ""

    def styles_left_open(self, end: int) -> list[Style]:
        """The styles a part ending at ``end`` must close, outermost first."""
        return [s for s in self.with_cut_link(end, self.structure.styles_open_at(end)) if s.open_end < end]

    def link_at(self, pos: int) -> Style | None:
        """The inline link or image holding ``pos`` as a style (`_link_label`), if its target can be carried."""
        atom = self.structure.atom_at(pos)
        link = _link_label(self.text, *atom) if atom is not None else None
        return link if link is not None and self._carried(link.closer) else None

    def with_cut_link(self, pos: int, styles: list[Style]) -> list[Style]:
        """``styles`` and the link whose label holds ``pos``: only a link longer than a part is ever cut
        there, as an atom is kept whole otherwise."""
        link = self.link_at(pos)
        if link is None or not link.open_end <= pos <= link.close_start:
            return styles
        return sorted([*styles, link], key=lambda s: s.open_start)

    # -- choosing the cut ------------------------------------------------------------------

    def rstrip(self, start: int, end: int) -> int:
        while end > start and self.text[end - 1].isspace():
            end -= 1
        return end

    def valid_end(self, start: int, end: int) -> bool:
        """An end that is not inside a fence line, nor just after an opening line (an empty block),
        nor inside a style marker, a link or a table row, nor just after a style opened, nor after
        a heading's word of ``#`` (the part would end the heading with it, read as its closing sequence), nor
        after a line's ``===`` or ``---`` that its text goes on from, nor before a heading's (`ends_at_underline`)."""
        if end <= start:
            return False
        f = self.fence_before(end)
        if f is not None and (f.open_start < end <= f.open_end or f.close_start < end < f.close_end):
            return False
        if f is not None and f.open_start < end <= f.close_end:
            # Code: no inline structure to respect; but in a quote, not between a line's ">" and its code.
            return not (f.contained and ">" in f.indent and self.in_prefix(end))
        if self.text[end - 1] == "#" and self.ends_heading_closed(start, end):
            return False
        if self.text[end - 1] in _MARKER_ENDS and self.ends_at_bare_marker(start, end):
            return False
        if self.text[end - 1] in "=-" and self.ends_at_underline(end) or self.ends_before_underline(end):
            return False
        return not self.structure.splits_marker(end)

    def ends_at_underline(self, end: int) -> bool:
        """A part ending at ``end`` would end with a line of only ``=`` or ``-`` that its text goes on from
        (``=== and more``, a paragraph's line): alone, the line would underline the one before as a heading,
        or, ``---``, be a rule."""
        text, line, line_end = self.text, self.text.rfind("\n", 0, end) + 1, self.text.find("\n", end)
        return (_UNDERLINE.fullmatch(text, line, end) is not None
                and bool(text[end:line_end if line_end != -1 else len(text)].strip()))

    def ends_before_underline(self, end: int) -> bool:
        """A part ending at ``end`` would end a setext heading's text before its underline (``Title`` of
        ``Title\\n===``): the title a paragraph, and the next part showing the ``===`` as typed."""
        text, line_end = self.text, self.text.find("\n", end)
        if line_end == -1 or text[end:line_end].strip() or not _UNDERLINE.match(text, line_end + 1):
            return False
        if self._underlines is None:  # parsed only for a text cut before such a line
            starts = [0, *(m.end() for m in re.finditer("\n", text))]
            self._underlines = frozenset(starts[t.map[1] - 1] for t in self.block_tokens()
                                         if t.type == "heading_open" and t.markup in ("=", "-") and t.map)
        return line_end + 1 in self._underlines

    def ends_at_bare_marker(self, start: int, end: int) -> bool:
        """A part from ``start`` to ``end`` would end with a line of only a list item's (or a quote's) markers
        whose text goes on after ``end``: an empty bullet (quote) there, and the next part's text out of the item
        (or, for a quote, the marker shown twice). The line break before them, in the part, is the better cut; a
        part holding nothing else (its item's text, a long address, longer than a part) is better cut in the text,
        the marker going with it."""
        text = self.text
        line = max(start, text.rfind("\n", start, end) + 1)
        line_end = text.find("\n", end)
        if not text[end:line_end if line_end != -1 else len(text)].strip():
            return False  # an empty item (quote line) in the text too
        if not text[line:end].strip():
            return False
        if (prefix_end := self._prefix_ends.get(line)) is None:
            # Cached: a line of a thousand "- " was read to its end for each of the part's candidate cuts.
            prefix_end = self._prefix_ends[line] = _LINE_PREFIX.match(text, line).end()  # type: ignore[union-attr]
        return end <= prefix_end

    def ends_heading_closed(self, start: int, end: int) -> bool:
        """A part from ``start`` to ``end`` would end a heading with a word of ``#`` the heading goes on after
        (``## About C #`` cut before ``and F #``): CommonMark reads it as the heading's closing sequence, not shown."""
        text, line, line_end = self.text, self.text.rfind("\n", 0, end) + 1, self.text.find("\n", end)
        if not text[end:line_end if line_end != -1 else len(text)].strip():
            return False  # the heading's own end: the original closes it so too
        if line < start and not _LINE_PREFIX.fullmatch(text, line, start):
            return False  # the part starts within the line's text: no heading (`_escape`)
        return _HEADING_CLOSED.fullmatch(text, line, end) is not None

    def closing_sequence(self, pos: int) -> tuple[int, int] | None:
        """The closing sequence of the heading on ``pos``'s line (`` #`` of ``## C #``: from the whitespace before its
        ``#`` to their end), which the whole does not show; None if the line is no heading that has one."""
        text, line = self.text, self.text.rfind("\n", 0, pos) + 1
        if not _ATX_OPENS.match(text, line):
            return None
        line_end = text.find("\n", pos)
        content = text[line:len(text) if line_end == -1 else line_end].rstrip(" \t\r")
        hashes = len(content) - len(content.rstrip("#"))
        if not hashes or content[-hashes - 1:-hashes] not in (" ", "\t"):
            return None
        closing = (line + len(content[:-hashes].rstrip(" \t")), line + len(content))
        if _HEADING_CLOSED.fullmatch(text, line, closing[1]) is None:
            return None
        if self._atx_headings is None:  # parsed only for a text cut in such a line
            starts = [0, *(m.end() for m in re.finditer("\n", text))]
            self._atx_headings = frozenset(starts[t.map[0]] for t in self.block_tokens()
                                           if t.type == "heading_open" and t.markup.startswith("#") and t.map)
        return closing if line in self._atx_headings else None

    def in_prefix(self, end: int) -> bool:
        """``end`` falls between a line's start and its text, the line going on after it."""
        text, line = self.text, self.text.rfind("\n", 0, end) + 1
        line_end = text.find("\n", end)
        return not text[line:end].strip(" >") and bool(text[end:line_end if line_end != -1 else len(text)].strip())

    def fits(self, head: str, start: int, end: int, tail: str) -> bool:
        return self.measure(head + self.text[start:end] + tail) <= self.limit

    def max_end(self, head: str, start: int, tail: str) -> int:
        """Largest end with head + text[start:end] + tail within the limit (or past an atom it ends in that
        fits whole, `_past_atom`); ``start`` if none.

        A safeguarded interpolation search: each guess follows from how the measure has grown
        so far (exact in one or two steps for a measure proportional to the length); without an
        upper bound yet it doubles once interpolation keeps falling short, and within a bracket
        it bisects whenever a guess did not halve it, and only bisects once two interpolated guesses
        landed next to a bound: a measure that leaps (Telegram's, past 100 spans, is the limit and
        one) draws each one there, a measure wasted for every halving."""
        n, limit = len(self.text), self.limit
        base = self._base(head + tail)
        lo, lo_m, hi, hi_m = start, base, -1, 0
        # Where the last part held far less than the limit in characters (Telegram's cap on spans: a hundred
        # "*a*" is 400 of 4,096), guessing the limit rendered ten times the part for each of them.
        guess = min(n, start + max(min(limit - base, 2 * self._last_window), 1))
        unbounded_steps, last_width, misses, interpolated = 0, -1, 0, False
        # Each candidate as the part would have it: out of the list items it starts in (`assemble`);
        # measured as written, a part starting in a list item was read otherwise, and rendered whole.
        written = self._writes(head, start)

        def measured(end: int) -> int:
            return self.measure(head + written(end) + tail)

        table = self.structure.table_at(start + 1) if start and not self.in_code(start) else None
        rows = table.row_ends[bisect.bisect_right(table.row_ends, start):] if table is not None else ()
        if rows and start >= table.head_end:  # type: ignore[union-attr]
            # In a table's body, whole rows (`_rows_held`): it is cut between them anyway.
            lo, lo_m, hi, hi_m = self._rows_held(start, rows, measured)
            if hi == -1 and lo == n:
                return n
            if hi == -1:  # it holds the rest of the table: what follows, as any text
                guess = min(n, lo + max(lo - start, 1))
            elif lo != -1 and head:
                return lo + 1  # `choose_cut` ends the part at that row's end, as at any end in the next row
            else:  # a row longer than the part, or plain text (`next_part` takes its end as found): where in it
                lo, lo_m = (start, base) if lo == -1 else (lo, lo_m)
                guess = min(hi - 1, lo + max((limit - lo_m) * (hi - lo) // max(hi_m - lo_m, 1), 1))

        while True:
            m = measured(guess)
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
                return self._past_atom(start, lo, measured)
            halved = last_width == -1 or width * 2 <= last_width
            misses += interpolated and width + 1 >= last_width  # it moved a bound by one: drawn next to it
            interpolated = halved and misses < 2
            if not interpolated:
                guess = (lo + hi) // 2
            else:
                step = (limit - lo_m) * width // max(hi_m - lo_m, 1)
                guess = min(hi - 1, max(lo + 1, lo + step))
            last_width = width

    def _writes(self, head: str, start: int) -> Callable[[int], str]:
        """The text of a part from ``start`` after ``head`` up to an end, as the part writes it: out of the list
        items it starts in (`body`), unless it starts the text or in code."""
        if start == 0 or self.inside(start) is not None or self.outside_its_item(start, head) is not None:
            return lambda end: self.text[start:end]
        return lambda end: self.body(start, end)

    def _base(self, head: str) -> int:
        """The measure of a part's ``head`` (and tail) alone, remembered: every part of a long table repeats its
        header rows."""
        if not head:
            return 0
        if head not in self._heads:
            self._heads[head] = self.measure(head)
        return self._heads[head]

    def _rows_held(self, start: int, rows: Sequence[int], measured: Measure) -> tuple[int, int, int, int]:
        """For a part from ``start`` in a table's body, ``rows`` the ends of the rows from there: the end of the last
        row it holds whole and its measure (-1, -1 if it holds none), and the end of the next, which it does not,
        and that one's measure (-1, 0 if it holds them all). Searched a row at a time: a part is cut between rows
        anyway, and its measure grows by a row's, where within a row it hardly grows but for the row's first
        cells (a row shown as a list: the header alone is a code block, which a part's first row replaces), so
        that guesses from it ran to the end of the table, rendered whole for each part. The first guess is as
        many rows as the last part held, the next one more (or fewer): a long table's parts hold about as many;
        then onwards as far as the rows measured so far say, but at most twice as far as the step before (past
        Telegram's cap on formatted spans the measure leaps, and a guess as far as it says measures many rows
        for nothing); then as `max_end`, in rows."""
        limit = self.limit
        lo, lo_m, hi, hi_m = 0, -1, len(rows) + 1, 0  # in rows from the start: the part holds lo, not hi
        k = min(len(rows), max(1, bisect.bisect_right(rows, start + self._last_window)))
        step, last_width, misses, interpolated = 0, -1, 0, False
        while True:
            m = measured(rows[k - 1])
            if m <= limit:
                lo, lo_m = k, m
            else:
                hi, hi_m = k, m
            width = hi - lo
            if width <= 1 or lo == len(rows):
                break
            if hi > len(rows) or not step:  # no row seen that it cannot hold, or the first guess held too many
                step = min(2 * step, (limit - lo_m) * lo // max(lo_m, 1)) if step else 1
                k = min(len(rows), lo + max(step, 1)) if hi > len(rows) else hi - 1
                continue
            halved = last_width == -1 or width * 2 <= last_width
            misses += interpolated and width + 1 >= last_width
            interpolated = halved and misses < 2 and lo > 0
            if not interpolated:
                k = (lo + hi) // 2
            else:
                k = min(hi - 1, max(lo + 1, lo + (limit - lo_m) * width // max(hi_m - lo_m, 1)))
            last_width = width
        return (rows[lo - 1] if lo else -1, lo_m, rows[hi - 1] if hi <= len(rows) else -1, hi_m)

    def _past_atom(self, start: int, end: int, measured: Measure) -> int:
        """``end``, or the end of the atom (a link, an image...) it falls in when the part holds that atom whole:
        cut short, an atom's Markdown is text, which can measure more than all of it rendered (an image's alt text
        shows no styles; Discord escapes a ``](`` left as text), so the search stopped inside one that fits."""
        atom = None if self.in_code(end) else self.structure.atom_at(end)
        return atom[1] if atom is not None and atom[0] >= start and measured(atom[1]) <= self.limit else end

    def choose_cut(self, start: int, end: int) -> int:
        """Where to end the part that may run up to ``end``.

        Paragraph, line, then space breaks in the later half of the window first, so parts stay full rather than
        ending at an early blank line; then the same anywhere; then a hard cut. Before spaces in the later half,
        the end of a CJK sentence in the last quarter (`_SENTENCE_END`), where Chinese and Japanese prose, which has
        no spaces, reads best cut. But a space (or a sentence's end) within inline code a part starting at a line
        break before it could hold whole comes after that line break: cut, the code (a command, a path) is copied in
        two pieces from two messages.
        """
        text = self.text
        half = start + (end - start) // _HALF
        for lo in (half, start + 1):
            for sep in ("\n\n", "\n", _SENTENCE_END, " "):
                ends: list[int] = []  # the cuts after sentences' ends, found once, not again at each retry
                if not isinstance(sep, str):
                    if lo != half:
                        continue  # prose of long sentences would take up to twice the parts: cut as if it had none
                    late = end - (end - start) // _SENTENCE_SHARE
                    stop = min(end + _SENTENCE_CLOSERS, len(text))
                    ends = [m.end() for m in sep.finditer(text, late, stop) if m.end() <= end]
                p = text.rfind(sep, lo, end) if isinstance(sep, str) else _last_before(ends, end + 1)
                while p != -1:
                    body_end = self.rstrip(start, p)
                    if self.valid_end(start, body_end) and not (
                            sep not in ("\n\n", "\n") and lo == half and self._cuts_code_span(start, body_end, end)):
                        return self._past_glued(start, p, end) if sep == " " else p
                    # Every break between body_end and p ends the part at body_end too: skip them,
                    # so a long run of whitespace is walked once, not once per break in it.
                    p = text.rfind(sep, lo, body_end) if isinstance(sep, str) else _last_before(ends, body_end)
        cut = _character_start(text, start, end)
        body_end = self.rstrip(start, cut)
        if not self.valid_end(start, body_end):
            # Rather than cut a fence line, a marker or a link, or end on an empty block, move it on.
            f = self.fence_before(body_end)
            if f is not None and f.close_start < body_end < f.close_end and f.close_start > start:
                cut = f.close_start
            elif f is not None and f.open_start < body_end <= f.open_end and f.open_start > start:
                cut = f.open_start
            elif (link := self.link_at(body_end)) is not None and link.open_start <= start < link.close_start:
                # A link longer than a part: cut its label (never its target), at a space if it has one here.
                cut = self._label_cut(max(start, link.open_end) + 1, min(body_end, link.close_start))
            elif (in_row := self._row_cut(start, end)) is not None:
                cut = in_row
            elif not self.in_code(body_end - 1):
                cut = self._before_marker(start, body_end, cut)
        elif (glued := self._before_glued(start, body_end)) is not None:
            cut = glued
        return cut

    def _past_glued(self, start: int, p: int, end: int) -> int:
        """``p``, a space a part from ``start`` up to ``end`` ends at, or, where only punctuation (with markers shown
        as typed) follows it, glued to an atom the part cannot hold and the next part holds only without that
        punctuation, the atom's start: the next part read ``(`` (``))**``) alone, and the part after it the atom."""
        text, structure = self.text, self.structure
        j = p
        while j < end and text[j].isspace():
            j += 1
        around = _SHOWN_AROUND.match(text, j).end()  # type: ignore[union-attr]
        if around == j or around > end or self.in_code(j) or structure.table_at(j) is not None:
            return p
        atoms = structure.atoms_starting_in(j, around + 1)
        if not atoms or not j < atoms[0][0] <= end < atoms[0][1]:
            return p
        a, b = atoms[0]
        cut = self._openers_before(a)  # ending with the markers opening a style around it, the part showed them
        if cut <= j or not self.valid_end(start, cut) or not _whole(text, cut):
            return p
        styles = structure.styles_open_at(a)
        opened = [(s.open_start, s.open_end) for s in styles if j <= s.open_start]
        if not opened:
            alone, with_glued = self.head(a), self.head(j)
            held = self.fits(alone[0], alone[1], b, "") and not self.fits(with_glued[0], with_glued[1], b, "")
            # Unless the next part holds it with that punctuation and all glued after it, without the markers of the
            # styles open around (``(https://…)`` of ``**see (https://…**)``): the atom's own part left that alone.
            unstyled = self._unstyled(j, b) if held and styles else None
            return cut if held and (unstyled is None or unstyled[1] < _SHOWN_AROUND.match(text, b).end()) else p
        if any(s.open_start < j for s in styles):
            return p
        # Held with the punctuation without the markers of the styles opened there (``**(``), it is `_unstyled`'s.
        quote = self._quoted(a, False)[0]
        unstyled = self._without(opened, j, b, lambda x, y: text[x:y])
        return cut if self.fits(quote, a, b, "") and self.measure(quote + unstyled) > self.limit else p

    def _before_glued(self, start: int, end: int) -> int | None:
        """Where a part from ``start`` that a hard cut ends at ``end`` ends instead, when text is glued there (the ``)``
        of ``(see [docs](…))``) that would go on alone: in the label of the link it ends, when the run is short (at
        most a quarter of the limit); before the last word character of the word it ends, when the run is only
        punctuation (`_short_of_glued`). None when neither is so, or the part holds too little of the label to leave
        some of it to the next."""
        text = self.text
        if end >= len(text) or text[end].isspace():
            return None
        if (link := self.link_at(end - 1)) is None or link.close_end != end:
            return None if (cut := self._short_of_glued(start, end)) == end else cut
        glued = re.compile(r"\S{1,%d}(?!\S)" % max(self.limit // _MARKER_SHARE, 1)).match(text, end)
        first = max(start, link.open_end) + 1
        if glued is None or first >= link.close_start:
            return None
        cut = self._label_cut(first, link.close_start - 1)
        # One atom filling the label (an image) is cut nowhere: the run goes on alone.
        return None if any(a < cut < b for a, b in self.structure.atoms_starting_in(first - 1, cut)) else cut

    def _cuts_code_span(self, start: int, pos: int, end: int) -> bool:
        """A cut at ``pos`` falls within a code span that a part starting at the line break the part from ``start``
        up to ``end`` would end at instead (a paragraph's, else a line's: `choose_cut`) could hold whole: where none
        could, the code is cut all the same, after a part of only what came before that line break."""
        text = self.text
        brk = text.rfind("\n\n", start + 1, end)
        brk = text.rfind("\n", start + 1, end) if brk == -1 else brk
        return brk != -1 and any(
            s.opener[0] == "`" and s.open_end < pos < s.close_start and brk < s.open_start
            and s.close_end - brk <= end - start for s in self.structure.styles_open_at(pos))

    def _row_cut(self, start: int, end: int) -> int | None:
        """Where to cut a table row the part cannot hold, ``end`` inside it: after a pipe between cells, else
        between words of a cell, in the later half of the part's piece of the row first; else as late as a cell's
        text allows (a word longer than that). None when ``end`` is in no row or nowhere in it will do."""
        row = self.structure.row_at(end)
        if row is None:
            return None
        text, first = self.text, max(start, row.start)
        for lo in (first + (end - first) // _HALF, first):
            edge = next((e + 1 for e in reversed(row.edges) if lo <= e < end and text[first:e].strip(" \t|")), None)
            if edge is not None:
                return edge
            p = text.rfind(" ", lo, end)
            while p != -1:
                body_end = self.rstrip(start, p)
                if body_end > first and self.structure.cuts_row(body_end):
                    return p
                p = text.rfind(" ", lo, body_end)
        atom = self.structure.atom_at(end)
        if atom is not None and atom[0] > first and self.structure.cuts_row(self.rstrip(start, atom[0])):
            return atom[0]
        for p in range(end, max(first, end - 16), -1):
            if _whole(text, p) and self.structure.cuts_row(p):
                return p
        return None

    def _label_cut(self, first: int, last: int) -> int:
        """Where to cut a link's label from ``first`` up to ``last``: at its last space before ``last``,
        else as late as possible, but never inside an atom the label holds (an escape, an entity, an
        image: cut, each shows its Markdown); ``last`` when one atom takes it all."""
        gaps, lo = [], first
        for a, b in self.structure.atoms_starting_in(first - 1, last):
            if a >= lo:
                gaps.append((lo, a))
            lo = max(lo, b)
        if lo <= last:
            gaps.append((lo, last))
        for lo, hi in reversed(gaps):
            space = self.text.rfind(" ", lo, min(hi + 1, last))
            if space != -1:
                return space
        return gaps[-1][1] if gaps else last

    def _before_marker(self, start: int, end: int, cut: int) -> int:
        """The last position before ``end`` that is a valid end, else ``cut`` itself."""
        atom = self.structure.atom_at(end)
        if atom is not None:
            # Before the atom, and before the style markers opening right before it (``**`` of ``**https://…``):
            # ending with them, the part would show them as typed; where only they, or a line's markers, come
            # before it in the part, it is given up on as plain text, cut in the atom (`_closed_in_atom`). Or, an
            # atom the part starts with, after it: a shorter guess (`next_part` cuts earlier by what a part is
            # over, which the link definitions it carries need not shrink with) cut it, shown as typed. One
            # longer than a part is over again, and the part given up on as plain text.
            if atom[0] > start:
                return max(start, self._openers_before(atom[0]))
            return self._short_of_glued(start, atom[1])
        for p in range(end - 1, max(start, end - 16), -1):
            if self.valid_end(start, p) and _whole(self.text, p):
                return p
        return cut

    def _short_of_glued(self, start: int, end: int) -> int:
        """``end`` for a part from ``start`` cut within a word, or, where only punctuation follows it up to a space
        (``)``, ``).``), before the last word character it holds, where that is a valid end, or in a piece of an
        address it starts within (cut anyway): the next part would hold only that punctuation."""
        text = self.text
        glued = re.compile(r"[^\w\s]{1,%d}(?!\S)" % max(self.limit // _MARKER_SHARE, 1)).match(text, end)
        if glued is None:
            return end
        last = end
        while last > start and re.match(r"[^\w\s]", text[last - 1]):
            last -= 1
        if last - 1 <= start or text[last - 1].isspace():
            return end
        cut = _character_start(text, start, last - 1)
        if (atom := self.structure.atom_at(last - 1)) is None:
            return cut if cut > start and self.valid_end(start, cut) else end
        if atom[0] < start:
            return cut
        # An address it holds whole (never cut when a part can hold it): before it, and the style markers opening
        # right before it, where the next part holds it with that punctuation (``(`` + ``https://….)``); not where
        # that leaves a part of punctuation alone (a message reading ``(``, no better than one reading ``)``).
        before = self._openers_before(atom[0])
        if before > start and atom[1] == last and re.search(r"\w", text[start:before]) and \
                self.valid_end(start, self.rstrip(start, before)) and \
                self.fits(self._quoted(before, False)[0], before, glued.end(), ""):
            return before
        return end

    def _openers_before(self, pos: int) -> int:
        """Where the style markers that open right before ``pos`` start (``pos`` when none do)."""
        moved = True
        while moved:
            moved = False
            for s in self.structure.styles_open_at(pos):
                if s.open_end == pos < s.close_start:
                    pos, moved = s.open_start, True
        return pos

    def _closed_in_atom(self, start: int, end: int, quote: str, written: Callable[[int], str]) -> tuple[int, str]:
        """The end of a part given up on as plain text from ``start`` up to ``end``, and what it closes: where it
        ends in an atom longer than a part (a long address) that it opened styles before, those styles, closed
        as a part keeping its structure would (alone, ``- **https://…`` showed its ``**``); else nothing. One ending
        right after such an atom, or within the markers closing those styles there, ends in the atom too: the
        part showed its openers as typed, or held one ``_`` of the ``__`` closing, the next part the other alone."""
        atom = self.structure.atom_at(end) or self._atom_closed_after(start, end)
        if atom is None:
            return end, ""
        end = self._short_of_bracket(atom, start, end)
        if atom[0] < start:
            return end, ""
        opened = [s for s in self.structure.styles_open_at(atom[0]) if s.open_start >= start]
        closers = "".join(s.closer for s in reversed(opened))
        if not opened or not self._carried(closers):
            return end, ""
        text, cut = self.text, end
        for _ in range(_RETRIES):
            over = self.measure(quote + written(cut) + closers) - self.limit
            if over <= 0 and text[cut - 1] not in _JOINS_CLOSERS and self._short_of_bracket(atom, start, cut) == cut:
                return cut, closers
            if over <= 0:
                # A marker the address ends its piece with would join the closers (``a_**``): cut before them.
                cut = _character_start(text, start, atom[0] + len(text[atom[0]:cut].rstrip(_JOINS_CLOSERS)))
                cut = self._short_of_bracket(atom, start, cut)
            else:
                cut = _character_start(text, start, cut - over)
            if cut <= atom[0]:
                break
        return end, ""

    def _short_of_bracket(self, atom: tuple[int, int], start: int, cut: int) -> int:
        """``cut``, or the cut before it where ``cut`` would leave an autolink's ``>`` alone to the next part: a quote
        of nothing, or, its styles reopened, ``~~>~~``."""
        a, b = atom
        if cut == b - 1 and self.text[a] == "<" and self.text[cut] == ">" and cut - 1 > max(start, a):
            return _character_start(self.text, start, cut - 1)
        return cut

    def _atom_closed_after(self, start: int, end: int) -> tuple[int, int] | None:
        """The atom that ``end`` falls right after, or within the closing markers after, of styles opened from
        ``start`` on (``__https://x.org/a_|_``); None if there is none."""
        atom_end = end
        while atom_end > start and self.text[atom_end - 1] in "*_~":
            atom_end -= 1
        closed = atom_end
        while closing := [s for s in self.structure.styles_open_at(closed)
                          if s.close_start == closed and s.open_start >= start]:
            closed = closing[0].close_end  # nested styles' markers closing one after the other (``***``)
        atom = self.structure.atom_at(atom_end - 1)
        return atom if closed > atom_end and end < closed and atom is not None and atom[1] == atom_end else None

    def assemble(self, head: str, start: int, cut: int, *, markers: bool = True) -> tuple[str, Fence | None,
                                                                                       list[Style]]:
        """The part from ``start`` to ``cut``: its head, its text, and what closes what it leaves
        open (nothing without ``markers``, when the limit cannot hold them)."""
        body_end = self.rstrip(start, cut)
        fence = self.open_at_end(body_end) if markers and (head or self.reserve(start)) else None
        closes = markers and fence is None and cut < len(self.text) and not self.in_code(body_end - 1)
        styles = self.styles_left_open(body_end) if closes else []
        merged = self._reopening(start)[1] if markers else []
        # Weighed without the closers of those it left out: reopening the outer one, it closes it.
        if not self._carried("".join(st.closer for st in styles if st not in merged)):
            styles = []
        closed = [s for s in styles if s not in merged]
        # A strikethrough it opened right inside another it closes: closed together, ``~~~~``, read as one run of
        # markers (and, at a line's start in the next part, a fence). Struck all the same, its ``~~`` is left out.
        inner = [s for s in _nested_strikes(closed) if s.open_start >= start] if fence is None else []
        tail = fence.close() if fence is not None else "".join(s.closer for s in reversed(closed) if s not in inner)
        left_out = [*((s.close_start, s.close_end) for s in merged), *((s.open_start, s.open_end) for s in inner)]
        if tail.startswith("~~") and self.text.endswith("~~", start, body_end):
            # Ended right after the "~~" closing one nested in the strikethrough it closes: both its markers left out.
            left_out += [span for s in self.structure.styles_open_at(body_end - 2)
                         if s.opener == "~~" and s.close_end == body_end and s.open_start >= start
                         for span in ((s.open_start, s.open_end), (s.close_start, s.close_end))]
        if (closing := self.closing_sequence(start)) is not None and start < closing[0] and closing[1] <= body_end \
                and not _LINE_PREFIX.fullmatch(self.text, self.text.rfind("\n", 0, start) + 1, start):
            # Starting within a heading's line, the part is no heading: it would show the closing sequence, as text.
            left_out.append(closing)
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
            body = outdented(body, len(outside.indent) - len(outside.outermost))
        items = self.items_left(start, placed, body_end) if placed < body_end else []
        numbers = self.rewritten(start, placed, body_end, items) if placed < body_end else {}
        if items or numbers:
            body += self._without(left_out, placed, body_end, lambda a, b: self.out_of_items(items, numbers, a, b))
        else:
            body += self._without(left_out, placed, body_end, lambda a, b: self.text[a:b])
        if markers and cut < len(self.text) and (tail[:1] == self.text[body_end - 1] or
                                                 not self.text[body_end].isspace()):
            # Literal markers it ends with would join those closing it, or, no longer before a character
            # (``_i_`` cut from ``_i_https``), may pair with one of their own: escaped.
            literal = max(self.structure.literal_run_to(body_end), start)
            if (literal < body_end and body.endswith(self.text[literal:body_end])
                    and not self._address_reads_on(start, literal)):
                body = body[:literal - body_end] + _escaped(self.text[literal:body_end])
        if (items or numbers) and fence is not None and fence is not outside and fence.open_end >= placed:
            # Its lines were taken out (or in) as far: so goes its close.
            columns = self.taken_out(items, fence.open_end + 1, numbers)
            indent = fence.indent[columns:] if columns >= 0 else " " * -columns + fence.indent
            tail = f"\n{indent}{fence.ticks}"
        return head + body + tail, fence, styles

    def _address_reads_on(self, start: int, pos: int) -> bool:
        """Whether a bare URL on ``pos``'s line, within the part from ``start``, reads on through ``pos`` (its
        trailing punctuation, as the ``_`` of ``https://x.org/a_`` before a code span): a backslash there would
        join the address, linked and shown (``https://x.org/a\\_``); unescaped, the address ends before it."""
        line = max(start, self.text.rfind("\n", start, pos) + 1)
        return any(a < pos - line < b for a, b, _ in bare_urls.spans(self.text[line:pos + 1]))

    def body(self, start: int, end: int) -> str:
        """``text[start:end]`` as a part from ``start`` has it when it starts in no code block: out of
        the list items it starts in, its items' markers rewritten (`out_of_items`)."""
        items = self.items_left(start, start, end)
        numbers = self.rewritten(start, start, end, items)
        return self.out_of_items(items, numbers, start, end) if items or numbers else self.text[start:end]

    def outside_its_item(self, start: int, head: str) -> Fence | None:
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

    def next_start(self, start: int, cut: int, left_open: Fence | None, closed: list[Style]) -> int:
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
                while j < n and text[j].isspace():  # the whitespace after them is at the cut too
                    j += 1
        if j < n and text[j] == "#" and (closing := self.closing_sequence(j)) is not None and closing[0] < j:
            # Only a heading's closing sequence left of its line, which the whole does not show: a part of it alone
            # showed ``\#``. Dropped, as the whole drops it.
            j = closing[1]
            while j < n and text[j].isspace():
                j += 1
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
        first = start  # where the part starts when it gives up on structure, its head and all
        head, start = self.head(start)
        tail = self.reserve(start)
        end = self.max_end(head, start, tail)
        self._last_window = max(end - start, 1)
        # The rest may fit once no closing fence needs room: the last part. Checked only when the
        # rest is about the window's size, so the text is not measured whole again for every part.
        if end < n and self.content_end - max(end, start) <= len(tail) and self.fits(head, start, self.content_end, ""):
            end = n
        markers = True
        if end < n and (end <= start or (end == start + 1 and _is_pair(text, end))):
            head, markers, start = "", False, first  # the limit cannot hold the markers: plain text it is
            end = self.max_end("", start, "")
            if end <= start or (end == start + 1 and _is_pair(text, end)):
                raise ValueError(f"limit {self.limit} cannot hold the character at {start}")
        if end >= n:
            part = self.assemble(head, start, n, markers=markers)[0]
            if self.measure(part) <= self.limit:
                return self._kept(part, first, n), n
            # Measured with room for a closing fence it does not get, the rest was read otherwise (a fence
            # there makes what follows code, link definitions too): cut it as any other part.
            end = n - 1
        cut = self.choose_cut(start, end)
        for _ in range(_RETRIES):
            if cut <= start or (cut == start + 1 and _is_pair(text, cut)):
                break  # no room left for the markers
            if not self.in_code(cut - 1) and self.ends_at_bare_marker(start, self.rstrip(start, cut)):
                break  # the line's text, longer than a part, is cut as plain text, its markers going with it
            part, fence, styles = self.assemble(head, start, cut, markers=markers)
            over = self.measure(part) - self.limit
            if over <= 0 and markers and fence is None and not styles and (
                    unclosed := self._unclosed(start, self.rstrip(start, cut))) is not None:
                # It closes none of the styles it leaves open, their markers taking too much of it: it would show
                # those it opened (and reopened) as typed, and the next part the closing ones. Ended before one it
                # opened, it closes those around it; else it holds the outermost whole, reopening none (`**~~a~~ b**`).
                style, before = unclosed
                shorter = self.choose_cut(start, before) if before > start else start
                if shorter > start and self.valid_end(start, self.rstrip(start, shorter)):
                    end, cut = before, shorter
                    continue
                whole = self._quoted(first, False)[0] + self.body(first, style.close_end)
                if self.measure(whole) <= self.limit:
                    # The part before closed the styles around it: the next part starts past their closers there.
                    return self._kept(whole, first, style.close_end), self.next_start(
                        first, style.close_end, None, self.styles_left_open(style.close_end))
            if over <= 0 and (alone := self._atom_alone(start, self.rstrip(start, cut))) is not None:
                # Of only style markers and punctuation before an atom (``**(**``), or with the atom the punctuation
                # glued after it left alone to the next part: the part holds the atom and that punctuation without
                # the markers; else, before an atom no part holds, the first piece of it (both given up on as plain
                # text).
                if (unstyled := self._unstyled(first, alone[0][1] + (not alone[1]))) is not None:
                    return unstyled
                if alone[1] and self.measure(text[alone[0][0]:alone[0][1]]) > self.limit and not any(
                        s.close_start < alone[0][0] for s in self.structure.styles_open_at(first)):
                    break  # (not past the closers of styles opened before, as plain text they would show as typed)
            if over <= 0:
                return self._kept(part, first, cut), self.next_start(start, cut, fence, styles)
            # Closing markers (or a measure that is not monotone) pushed it over: cut earlier.
            end = max(start + 1, min(end, cut) - over)
            cut, tried = self.choose_cut(start, end), cut
            if cut == tried:
                break  # an atom the part starts with, longer than a part
        if (unstyled := self._unstyled(first, first + 1)) is not None:
            return unstyled
        # Give up on structure for this part: plain text, as much as fits, at least one character.
        start = first
        # Within a quoted line's text, it keeps the line's quote markers: without them, the piece is out of the quote.
        quote = self._quoted(start, False)[0]
        end = self.max_end(quote, start, "")
        if end <= start or (end == start + 1 and _is_pair(text, end)):
            quote, end = "", self.max_end("", start, "")
        end = _character_start(text, start, end)
        end = end if end > start else start + (2 if _is_pair(text, start + 1) else 1)
        # Of the styles open at its start, which it does not reopen, a closer in its later half, alone, would show
        # as typed: the part ends before it, and the next starts past it (a few such styles, that a part would
        # carry; thousands open at once show their markers anyway).
        open_here = self.structure.styles_open_at(start)
        if self._carried("".join(s.closer for s in open_here)):
            end = min((s.close_start for s in open_here if start + (end - start) // 2 < s.close_start < end),
                      default=end)
        end = self._short_of_glued(start, end)
        # As measured: out of the list items it starts in (``2.`` for a list's second ``123456789.``, shorter).
        written = self._writes(quote, start)
        end, closers = self._closed_in_atom(start, end, quote, written)
        return (self._kept(quote + written(end) + closers, start, end),
                self.next_start(start, end, None, self.styles_left_open(end)))

    def _atom_alone(self, start: int, end: int) -> tuple[tuple[int, int], bool] | None:
        """The atom a part from ``start`` to ``end`` holds, or ends right before, with only style markers and
        punctuation besides (a reader sees ``(`` alone, the next part the atom; or the atom, the next part the ``)``
        glued after it), and whether the part ends before it; None if it holds more."""
        text = self.text
        around = _SHOWN_AROUND.match(text, start).end()  # type: ignore[union-attr]
        if end <= start or self.in_code(start):
            return None
        if around >= end:
            atoms = self.structure.atoms_starting_in(end, around + 1)
            return (atoms[0], True) if atoms else None
        atoms = self.structure.atoms_starting_in(start, around + 1)
        if atoms and atoms[0][1] == end < len(text) and not text[end].isspace():
            return atoms[0], False
        return None

    def _unstyled(self, first: int, least: int) -> tuple[str | None, int] | None:
        """For a part from ``first`` with only style markers and punctuation before an atom (``**(`` of ``**([site](…
        ))** more``) that a part holds whole but not with those styles' markers, that part without them: the atom and
        the text glued around it, as far as it fits (up to a space, else past the markers and punctuation after it,
        else past the markers closing right after it; at least to ``least``), and where the next part starts; None
        where there is no such atom, or it does not fit. Cut before the atom, a part read ``(`` alone (``**(**``);
        cut in it, it showed its Markdown; cut after it, the next read ``)`` alone. Its styles go unshown instead
        (the next part reopens those still open)."""
        text, structure = self.text, self.structure
        if self.in_code(first) or structure.table_at(first) is not None:
            return None
        atoms = structure.atoms_starting_in(first, _SHOWN_AROUND.match(text, first).end() + 1)  # type: ignore
        if not atoms:
            return None
        a, b = atoms[0]
        word = re.compile(r"\S{0,%d}(?!\S)" % (self.limit // _MARKER_SHARE)).match(text, b)
        glued = _SHOWN_AROUND.match(text, b).end()  # type: ignore[union-attr]
        closed = b
        while closing := [s for s in structure.styles_open_at(closed) if s.close_start == closed]:
            closed = closing[0].close_end  # nested styles' markers closing one after the other (``**~~``)
        # Past the punctuation glued after it, up to a space or the text's end (``))`` alone, a part of its own).
        ends = [*([word.end()] if word else []), *([glued] if text[glued:glued + 1].isspace() or glued == len(text)
                                                   else []), closed]
        quote = self._quoted(first, False)[0]
        for end in dict.fromkeys(e for e in ends if e >= least):
            if structure.splits_marker(end) or any(s.open_start >= b for s in self.styles_left_open(end)):
                continue  # within a marker, or after one opening a style it does not close
            # Closers of the styles opened before it (``))_**`` of ``**_… [c](…)))_**``) too: it reopens none.
            left_out = [*((s.open_start, s.open_end) for s in structure.styles_open_at(a) if first <= s.open_start),
                        *((s.close_start, s.close_end) for s in structure.styles_open_at(b) if s.close_end <= end),
                        *((s.close_start, s.close_end) for s in structure.styles_open_at(first)
                          if s.open_start < first and s.close_end <= a)]
            written = self._without(left_out, first, end, lambda x, y: text[x:y])
            if self.body(first, end) != text[first:end] or _block_escape(written, 0) is not None:
                return None  # out of a list item, or opening a block: as any other part
            if self.measure(quote + written) <= self.limit:
                return self._kept(quote + written, first, end), self.next_start(first, end, None, [])
        return None

    def _unclosed(self, start: int, end: int) -> tuple[Style, int] | None:
        """For a part from ``start`` to ``end`` that cannot close the styles it leaves open (their closers take more
        than a quarter of the limit), the outermost of them it opened, and the last end before ``end`` that leaves
        open only styles it can close: before the markers opening the innermost one it opened whose outer ones it
        can close (``start`` if none). None if it can close them all, or opened none of them."""
        left = self.styles_left_open(end)
        if self._carried("".join(s.closer for s in left)):
            return None
        first = next((i for i, s in enumerate(left) if s.open_start >= start), None)
        if first is None:
            return None
        # Summed, not joined for each, and walked out through ``left`` alone: thousands may be open (`_carried`).
        total, inner, room = 0, None, self.limit // _MARKER_SHARE
        for i, s in enumerate(left):
            if total > room:
                break
            inner = i if i >= first else inner
            total += len(s.closer)
        if inner is None:
            return left[first], start
        while inner > 0 and left[inner - 1].open_end == left[inner].open_start:
            inner -= 1  # past the markers opening the styles around it right before it: ended there, it opens them
        return left[first], left[inner].open_start

    def _kept(self, part: str, start: int, end: int) -> str | None:
        """``part``, unless its text from ``start`` to ``end`` is blank (it holds only markers)."""
        return None if is_blank(self.text[start:end]) else part


def split_text(text: str, limit: int, measure: Measure = len) -> list[str]:
    """Cut the Markdown ``text`` into parts with ``measure(part) <= limit``, in order.

    Blank text (empty, or only whitespace and invisible characters: `platforms.formatting.blank`)
    gives ``[]``; text that fits is returned whole and unchanged. Blank parts are dropped, and so are
    parts of only empty code blocks (they show nothing either). Joined,
    the parts give back the text except for the whitespace at the cuts (an indented code line cut in
    two is indented again) and in the list items a part starts in, the markers added to close and
    reopen code blocks, styles, tables (a row longer than a part: its first cell too) and links longer
    than a part (or such a link written out, its address too long to repeat), a backslash keeping a part
    that starts within a line from opening a block there (a quote, a list...) or markers shown as typed
    from marking a style, a backslash before the delimiter row of a table whose header no part can hold (written
    as text), the ``~~`` of a strikethrough nested in one that a part reopens (or closes) alone, the markers of the
    styles around a link or address that a part holds only without them, a quote's markers
    before the rest of a quoted line, a heading's closing sequence after a cut within its line, and the list markers
    rewritten to go on with a list's numbers (see the module docstring); a text of only empty code blocks
    or link definitions gives its parts as written, as a renderer sends such a text that fits (they show
    nothing); a text with link reference definitions has those a part uses at its end (up to half the
    limit), and no part of definitions only (`gateway.link_references`).
    Raises ValueError when ``limit`` cannot hold even one character; a limit too small for a part's
    markers plus a character splits that stretch without them.
    """
    if limit < 1:
        raise ValueError(f"limit must be positive, got {limit}")
    if is_blank(text):
        return []
    if measure(text) <= limit:
        return [text]
    text = _untabled(_unlinked(text, limit, measure), limit, measure)
    references = link_references.References(text, limit // _REFERENCE_SHARE)
    splitter = _Splitter(text, limit,
                         (lambda part: measure(part + references.for_part(part))) if references else measure)
    parts: list[str] = []
    start, n = 0, len(text)
    while start < n:
        part, start = splitter.next_part(start)
        if part is not None:
            parts.append(part)
    # Parts of only empty code blocks (a fence's close, the rest of its lines blank, or a reply's empty ```py block
    # the part before had no room for) or of link definitions show nothing within the text; alone, a renderer
    # would send them as written, fences and all.
    shown = [p for p in parts if not only_empty_code(p)]
    if references:
        # Not after a fence the original leaves open: there they would be code, shown as written.
        shown = [p if leaves_code_open(p) else p + references.for_part(p)
                 for p in shown if not link_references.shows_nothing(p)]
    # A text of nothing else is sent as written, as a renderer sends one that fits: left out, it would vanish.
    return shown or parts


def _nested_strikes(styles: list[Style]) -> list[Style]:
    """Of ``styles`` (outermost first), the strikethroughs right inside another: their markers next to its own."""
    return [s for before, s in zip(styles, styles[1:]) if s.opener == before.opener == "~~"]


def _escaped(markers: str) -> str:
    return "".join("\\" + c for c in markers)


def _block_escape(text: str, pos: int) -> int | None:
    """Where a backslash keeps what would open a block at a line's start at ``pos`` (`_OPENS_BLOCK`) text: before
    it, or before the ``.`` or ``)`` of a number (one before a digit escapes nothing, and is shown); None if nothing
    opens one there."""
    opens = _OPENS_BLOCK.match(text, pos)
    return None if opens is None else pos if opens.group(2) is None else opens.end(2)


def _unlinked(text: str, limit: int, measure: Measure) -> str:
    """``text`` with every link or image that no part can hold, nor carry the target of (``](href)``, see
    `_carried`), written out as its label (alt text) and its address: cut as a link, a part would show its
    Markdown. A space goes after the address unless whitespace follows, or only punctuation an address leaves out
    (glued, the next word would be linked with it; spaced off, the ``*`` closing an italic would close nothing), and
    after the markers closing styles right after it (``**[説明](…)**です``: ``**説明 https://… **です`` showed them); a
    title (``"title"``), a tooltip no chat shows, is dropped. Only a target with no ``)`` in its first quarter
    of the limit (or a ``(``, ``<`` or backslash before it, where a ``)`` may not end it) is looked at, so the
    text is parsed only where one may be that long."""
    marker_room = limit // _MARKER_SHARE
    targets = list(re.finditer(r"\]\((?=[^)]{%d}|[^)]*[(<\\])" % max(marker_room - 2, 0), text))
    if not targets:
        return text
    structure = _Splitter(text, limit, measure).structure
    for target in reversed(targets):
        q, atom = target.start(), structure.atom_at(target.start())
        link = _link_label(text, *atom) if atom is not None else None
        if link is None or link.close_start != q or len(link.closer) <= marker_room:
            continue
        line = text.rfind("\n", 0, link.open_start) + 1
        # A part holding the link holds the quote markers of its line too, and the text glued after it (a ``)`` or
        # ``.``), unless that is longer than a quarter of the limit: left to the next part, it would be one alone.
        quotes = "> " * text.count(">", line, _LINE_PREFIX.match(text, line).end())  # type: ignore[union-attr]
        glued = re.compile(r"\S{0,%d}(?!\S)" % marker_room).match(text, link.close_end)
        if measure(quotes + text[link.open_start:glued.end() if glued else link.close_end]) > limit:
            body = link.closer[2:-1].lstrip(" \t\n")
            destination = parseLinkDestination(body, 0, len(body))
            href = body[:destination.pos]
            if "\\" in href and not href.startswith("<"):
                href = f"<{destination.str}>"  # its escapes would show as typed; an autolink has none
            gap, closed = "", link.close_end
            if not bare_urls.ends_before(href, text, closed):
                # Past the markers of the styles closing right after it (``**[説明](…)**です``, closed there as CJK
                # text reads them): spaced off the address, they would close nothing, and show as typed.
                while closing := [s for s in structure.styles_open_at(closed) if s.close_start == closed]:
                    closed = closing[0].close_end
                gap = " "
            written = f"{text[link.open_end:q]} {href}{text[link.close_end:closed]}{gap}"
            if _LINE_PREFIX.fullmatch(text, line, link.open_start):
                # At a line's text, a label written out as ``>`` or ``#`` would open a quote or a heading, unshown;
                # after spaces too (``[ > go](…)``), which, four of them, would open a code block.
                written = written.lstrip(" \t")
                at = _block_escape(written, 0)
                written = written if at is None else f"{written[:at]}\\{written[at:]}"
            text = f"{text[:link.open_start]}{written}{text[closed:]}"
    return text


def _untabled(text: str, limit: int, measure: Measure) -> str:
    """``text`` with every table whose header row, with its delimiter row, no part can hold written as text: a
    backslash before its delimiter row (``\\|---|``). A table is cut only between body rows, each part repeating its
    header rows, so such a header was cut as plain text, mid-word, and the part after it read the rest of the header
    with the delimiter row as a table's, its first cell (over the rows' first column, a title no renderer shows)
    lost. Only a header line longer than a quarter of the limit is looked at, so the text is parsed only where one
    may be that long."""
    if not re.search(r"^(?=[^\n]{%d})[^\n|]*\|" % (limit // _MARKER_SHARE), text, re.MULTILINE):
        return text
    starts = [0, *(m.end() for m in re.finditer(r"\r\n?|\n", text))]  # markdown-it's line breaks, \r too
    escapes = []
    for tok in markdown.block_tokens(text):
        if tok.type != "table_open" or tok.map is None or tok.map[0] + 2 > len(starts):
            continue
        header, delimiter = starts[tok.map[0]], starts[tok.map[0] + 1]
        if delimiter - header <= limit // _MARKER_SHARE:
            continue
        at = re.compile(r"[ \t>]*").match(text, delimiter).end()  # type: ignore[union-attr]
        end = starts[tok.map[0] + 2] if tok.map[0] + 2 < len(starts) else len(text)
        # Held neither as text nor as the table a part repeats (a padded one is far shorter so on Discord).
        as_text = f"{text[header:at]}\\{text[at:end]}".rstrip()
        if measure(as_text) > limit and measure(text[header:end].rstrip()) > limit:
            escapes.append(at)
    for at in reversed(escapes):
        text = f"{text[:at]}\\{text[at:]}"
    return text


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
