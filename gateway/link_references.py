"""Reference-style links (``[the docs][d1]`` and, anywhere, ``[d1]: https://…``) in a reply cut into parts.

Each part is rendered on its own, so a link whose definition is in another part showed as
typed, brackets and all, and a part holding only definitions rendered as nothing (a message
Telegram and Discord refuse as empty). `References` writes the definitions a part uses once
more, for the splitter to add to it: only those, since every definition in every part left a
part of a reply with many long ones no room for its text (or none, a reply that could not be
sent), and no more than a share of the limit, past which a part's further references show as
typed.
"""

from __future__ import annotations

import bisect
import itertools
import re

from markdown_it.common.utils import normalizeReference

from platforms.formatting import blocks
from platforms.formatting.markdown import definitions, parse

# A bracketed text holding no unescaped bracket: a link label is one (CommonMark allows no unescaped
# bracket in a label), so every reference a part makes is among these.
_BRACKETED = re.compile(r"\[((?:[^\[\]\\]|\\.){1,999})\]", re.DOTALL)
_LINE_INDENT = re.compile(r" {0,3}")
# A line that may start a definition: a label first on it, in a quote or a list item or not (more than CommonMark
# takes: a hint). After its newline, which lets the search skip to each line for a small share of a whole parse
# (a lone CR, a line break to markdown-it too, is read as one: `_lines`).
_DEFINITION_LINE = re.compile(r"\n[ \t>*+\-0-9.)]*\[((?:[^\[\]\\]|\\.){1,999})\]:", re.DOTALL)
_ANY_LABEL = "\n"
"""`_hint`'s key of a line whose label may be any: no label normalizes to a line break."""


class References:
    """The link reference definitions of a text, to be written again after the parts that use them."""

    def __init__(self, text: str, budget: int, *, longest: int | None = None) -> None:
        """``budget``: the most characters the definitions added to one part may take; ``longest``: the longest
        definition kept, if any is too long for a part to carry (a dump of megabytes on one ``[a]: …`` line)."""
        self.budget = budget
        self._lines: dict[str, str | None] = {}
        for label, href, title in definitions(text):
            if (line := _kept(_line(label, href, title), longest)) is not None:
                self._lines[label] = line

    def __bool__(self) -> bool:
        return bool(self._lines)

    def for_part(self, part: str) -> str:
        """The definitions ``part`` refers to, in the order it first does, one a line after a blank
        line (``""`` for none), as many as fit the budget: those already defined in it too, which
        costs some room and changes nothing, since the first definition of a label wins."""
        lines: list[str] = []
        seen: set[str] = set()
        room = self.budget - 2
        for m in _BRACKETED.finditer(part):
            if part.startswith(":", m.end()) and _LINE_INDENT.fullmatch(part, part.rfind("\n", 0, m.start()) + 1,
                                                                          m.start()):
                continue  # a definition itself
            label = normalizeReference(m.group(1))
            line = self._line(label)
            if line is None or label in seen or len(line) + 1 > room:
                continue
            seen.add(label)
            lines.append(line)
            room -= len(line) + 1
        return "\n\n" + "\n".join(lines) if lines else ""

    def _line(self, label: str) -> str | None:
        return self._lines.get(label)


class LateReferences(References):
    """`References` of a text too long to find all of them in (a start of it is split: `gateway.long_messages`),
    each label's looked for once a part refers to it, and only in the runs of blocks (`blocks.chunks`) with a
    line that may define it (`_DEFINITION_LINE`): the runs are found by a scan of the lines, and only those are
    parsed. Found all at once, every run holding ``]:`` was parsed: a code block of megabytes (a dump with
    ``row[1]: …`` lines) before a definition at the end took some 2 s per 10 MB, on top of the split."""

    def __init__(self, text: str, budget: int, *, longest: int | None = None) -> None:
        self.budget = budget
        self._text, self._longest = text, longest
        self._lines = {}
        """By label: its definition written again, None where it has none (or one longer than ``longest``)."""
        self._hints: dict[str, list[int]] = {}
        """By label: where each line that may define it starts, in order."""
        for m in _DEFINITION_LINE.finditer("\n" + _lines(text)):  # a newline first: the text's first line is one
            self._hints.setdefault(_hint(m.group(1)), []).append(m.start())
        self._starts: list[int] = []
        """Where each run of the text starts, and its end: found once a label with a hint is asked for."""
        self._runs: dict[int, dict[str, tuple[str, str, str]]] = {}
        """By run (its index in ``_starts``), once parsed: its definitions by label."""

    def __bool__(self) -> bool:
        return bool(self._hints)

    def _line(self, label: str) -> str | None:
        if label in self._lines:
            return self._lines[label]
        line = None
        hints = [*self._hints.get(label, ()), *self._hints.get(_ANY_LABEL, ())]
        if hints and not self._starts:
            self._starts = list(itertools.accumulate(map(len, blocks.chunks(self._text)), initial=0))
        # The first definition of a label wins: its runs are read in order, each parsed once.
        for i in sorted({bisect.bisect_right(self._starts, at) - 1 for at in hints}):
            if i not in self._runs:
                self._runs[i] = {d[0]: d for d in definitions(self._text[self._starts[i]:self._starts[i + 1]])}
            if (found := self._runs[i].get(label)) is not None:
                line = _kept(_line(*found), self._longest)
                break
        self._lines[label] = line
        return line


def _line(label: str, href: str, title: str) -> str:
    """A definition written again: the label as markdown-it keys it (matching the links written with it), the
    address between <>."""
    quoted = ' "' + title.replace("\\", "\\\\").replace('"', '\\"') + '"' if title else ""
    return f"[{label}]: <{href}>{quoted}"


def _lines(text: str) -> str:
    """``text`` with each CR a newline, its length kept: lines broken by a lone CR are scanned as markdown-it reads
    them (not in the pattern, which searched for two characters some ten times slower)."""
    return text.replace("\r", "\n") if "\r" in text else text


def _hint(label: str) -> str:
    """The key a line defining ``label`` (as typed there) is found by: `_ANY_LABEL` for a label over lines or holding
    a NUL, which normalizing what is typed does not give as markdown-it reads it (in a quote, ``[a`` and ``> b]:``
    define ``a b``; a NUL is read as U+FFFD): such a line is parsed for any label."""
    return _ANY_LABEL if "\n" in label or "\0" in label else normalizeReference(label)


def _kept(line: str, longest: int | None) -> str | None:
    return line if longest is None or len(line) <= longest else None


def shows_nothing(part: str) -> bool:
    """``part`` holds only definitions (and whitespace): rendered, it is empty."""
    return not parse(part)


def may_define(text: str, pos: int, start: str) -> bool:
    """Whether ``text`` from ``pos`` (> 0) on may define a label that ``start`` refers to: a scan of its lines, for
    a small share of what finding its definitions takes (`definitions` parses each run of blocks holding ``]:``,
    and a code block of many megabytes is one run); True may be wrong, False is not."""
    labels = {_hint(m.group(1)) for m in _DEFINITION_LINE.finditer(_lines(text), pos - 1)}
    return bool(labels) and any(_ANY_LABEL in labels or normalizeReference(m.group(1)) in labels
                                for m in _BRACKETED.finditer(start))


def cut_before_definition(text: str, pos: int, longest: int) -> int:
    """``pos``, or the start of its line when a definition may begin there, ``longest`` characters before ``pos``
    at most: a start of ``text`` cut within it would define the label with its address cut short (``[r0]:
    https://exa``), and the first definition of a label wins over the whole one written after the start. A line
    longer than that no part could carry whole anyway; moved back to its start, a start of ``text`` within one
    line of megabytes stayed a few characters long, however far the caller asked it to reach."""
    line = text.rfind("\n", max(0, pos - longest - 1), pos) + 1
    return line if line > 0 and _DEFINITION_LINE.match(text, line - 1) else pos
