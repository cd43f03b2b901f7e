"""A Telegram user's formatting that says what their text alone does not, written into it as the Markdown the model
reads.

Telegram apps send a message's text (a caption) without its markup, the formatting beside it as entities (UTF-16
offsets). Read alone, a link put on words ("summarise this article") came without its address, a code block as bare
lines, a struck-out word as meant. So a link is ``[words](address)``, code is between backticks, a code block fenced
with its language, a quote after ``>`` and struck text between ``~~``. Emphasis (bold, italic, underline, a spoiler)
stays plain: it changes no meaning, and its markers would only crowd the user's own asterisks and underscores, which,
like the rest of the text, are never escaped: the model reads what was typed. A mention of a user without a username
(``text_mention``) is the name as written: the id behind it tells the model nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from aiogram.enums import MessageEntityType as Kind
from aiogram.types import MessageEntity

from platforms.formatting.blank import is_blank

_BLOCKS = {Kind.PRE: 1, Kind.BLOCKQUOTE: 2, Kind.EXPANDABLE_BLOCKQUOTE: 2}
"""Markdown's blocks, each on lines of its own, which Telegram's are not always ("look: print(1)" in one line), and
the line breaks that end one: a line right after a quote would be read as more of it."""


def as_markdown(text: str, entities: Sequence[MessageEntity] | None, *, plain_to: int = 0) -> str:
    """``text`` with what its ``entities`` say that it does not (see above) written in; its first ``plain_to``
    characters (a command and what is glued to it) as they are, an entity begun among them read as none."""
    units = text.encode("utf-16-le", "surrogatepass")  # a lone surrogate a client sent is a unit too
    start = len(text[:plain_to].encode("utf-16-le", "surrogatepass")) // 2
    read = _nested([e for e in entities or () if e.type in _WRITE and e.offset >= start], units)
    read = _nested(_struck_whole(read), units) if read else read
    return _Markdown(units, read).written() if read else text


def _struck_whole(entities: list[MessageEntity]) -> list[MessageEntity]:
    """``entities`` with struck pieces side by side as one: Telegram cuts struck words at every other entity's
    edge (TDLib's ``split_entities``: a link, an address or a mention it found), and ``~~a~~~~b~~`` strikes
    nothing. Pieces whose whole would cut another entity stay apart."""
    runs: list[list[MessageEntity]] = []
    for piece in (e for e in entities if e.type == Kind.STRIKETHROUGH):
        if runs and runs[-1][-1].offset + runs[-1][-1].length == piece.offset:
            runs[-1].append(piece)
        else:
            runs.append([piece])
    others, joined = [e for e in entities if e.type != Kind.STRIKETHROUGH], []
    for run in runs:
        start, end = run[0].offset, run[-1].offset + run[-1].length
        if len(run) > 1 and all(e.offset >= end or e.offset + e.length <= start or start <= e.offset
                                and e.offset + e.length <= end or e.offset <= start and end <= e.offset + e.length
                                for e in others):
            run = [run[0].model_copy(update={"length": end - start})]
        joined += run
    return others + joined


def _nested(entities: list[MessageEntity], units: bytes) -> list[MessageEntity]:
    """``entities`` in order, but those Telegram does not send: outside the text, cutting a character in two,
    overlapping another but for one within the other, or within one of their kind (Telegram merges those)."""
    kept: list[MessageEntity] = []
    around: list[MessageEntity] = []  # the entities kept that enclose the next one, innermost last
    for entity in sorted(entities, key=lambda e: (e.offset, -e.length)):
        end = entity.offset + entity.length
        if entity.offset < 0 or entity.length <= 0 or end * 2 > len(units):
            continue
        if _inside_a_character(units, entity.offset) or _inside_a_character(units, end):
            continue
        while around and around[-1].offset + around[-1].length <= entity.offset:
            around.pop()
        if around and end > around[-1].offset + around[-1].length or any(a.type == entity.type for a in around):
            continue
        kept.append(entity)
        around.append(entity)
    return kept


def _inside_a_character(units: bytes, offset: int) -> bool:
    return 0xDC00 <= int.from_bytes(units[offset * 2 : offset * 2 + 2], "little") <= 0xDFFF  # a low surrogate


class _Markdown:
    """The text held in UTF-16 (``units``) with its ``entities``, nested as `_nested` keeps them, written in.
    Not aiogram's `TextDecoration.unparse`: it looks through every later entity for each one's, taking a third of a
    second for a message of 2,000 code spans, and stops at an offset cutting a character in two."""

    def __init__(self, units: bytes, entities: list[MessageEntity]) -> None:
        self._units, self._entities = units, entities

    def written(self) -> str:
        return self._within(0, 0, len(self._units) // 2)[0]

    def _within(self, index: int, start: int, end: int) -> tuple[str, int]:
        """The text from UTF-16 offset ``start`` to ``end``, the entities from ``index`` on that begin there written
        in; and the index of the first entity after them. Each entity is visited once, and at most one of a kind
        encloses another: as deep as there are kinds."""
        parts, at = [], start
        while index < len(self._entities) and self._entities[index].offset < end:
            entity = self._entities[index]
            parts.append(self._text(at, entity.offset))
            inner, index = self._within(index + 1, entity.offset, entity.offset + entity.length)
            if is_blank(inner) and entity.type != Kind.TEXT_LINK:  # shows nothing: a blank message stays one
                parts.append(inner)
            else:
                parts.append(self._block(entity, _WRITE[entity.type](entity, inner)))
            at = entity.offset + entity.length
        parts.append(self._text(at, end))
        return "".join(parts), index

    def _block(self, entity: MessageEntity, written: str) -> str:
        if entity.type not in _BLOCKS:
            return written
        before = "" if entity.offset == 0 or self._text(entity.offset - 1, entity.offset) == "\n" else "\n"
        end = entity.offset + entity.length
        if end * 2 == len(self._units):
            return before + written
        breaks = len(written) - len(written.rstrip("\n")) + len(re.match("\n*", self._text(end, end + 2))[0])
        return before + written + "\n" * max(0, _BLOCKS[entity.type] - breaks)

    def _text(self, start: int, end: int) -> str:
        """The text from UTF-16 offset ``start`` to ``end``; a look ahead past ``end`` cutting a character in two
        drops it (an entity never does: `_nested`)."""
        return self._units[start * 2 : end * 2].decode("utf-16-le", "surrogatepass")


def _link(entity: MessageEntity, words: str) -> str:
    url = entity.url or ""
    if words.strip() == url:
        return words
    if is_blank(words):  # a link shown as its preview alone, under a zero-width space
        return url
    if re.search(r"[\s()<>]", url):  # else read as the link's end, or as none
        url = "<" + re.sub(r"([<>])", r"\\\1", url) + ">"
    # A backslash escapes only what Markdown may escape ("C:\Users" is as typed); the words' last one the "]".
    words = re.sub(r"\\(?=[!-/:-@\[-`{-~]|$)", r"\\\\", words)
    return "[" + re.sub(r"([\[\]])", r"\\\1", words) + f"]({url})"


def _code(_: MessageEntity, code: str) -> str:
    ticks = "`" * (_longest_run(code) + 1)
    pad = " " if code.startswith("`") or code.endswith("`") else ""
    return f"{ticks}{pad}{code}{pad}{ticks}"


def _pre(entity: MessageEntity, code: str) -> str:
    fence = "`" * max(3, _longest_run(code) + 1)
    language = entity.language or ""
    info = "" if re.search(r"[`\r\n]", language) else language  # would not be one
    ending = "" if code.endswith("\n") else "\n"
    return f"{fence}{info}\n{code}{ending}{fence}"


def _longest_run(text: str) -> int:
    return max(map(len, re.findall("`+", text)), default=0)


def _struck(_: MessageEntity, words: str) -> str:
    core = words.strip()
    if not core:
        return words
    lead = words[: len(words) - len(words.lstrip())]
    return f"{lead}~~{core}~~{words[len(lead) + len(core) :]}"  # "~~ x ~~" is no strikethrough


def _quote(_: MessageEntity, quoted: str) -> str:
    body = quoted.rstrip("\n")
    return "\n".join(f"> {line}" if line else ">" for line in body.split("\n")) + quoted[len(body) :]


_WRITE: dict[str, Callable[[MessageEntity, str], str]] = {
    Kind.TEXT_LINK: _link, Kind.CODE: _code, Kind.PRE: _pre, Kind.STRIKETHROUGH: _struck,
    Kind.BLOCKQUOTE: _quote, Kind.EXPANDABLE_BLOCKQUOTE: _quote}
"""How each kind of entity read is written, given what it covers as written."""
