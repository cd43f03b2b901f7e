"""Bare web addresses in the agent's Markdown, read as links before anything else reads them.

Models write URLs without ``<…>`` all the time, and CommonMark reads their
characters as Markdown: the ``_a_`` of ``https://example.com/_a_/b`` becomes
italics and the address shown is wrong. This inline rule takes an ``http://`` or
``https://`` address as one link token first (``markup == "linkify"``), its text
and target exactly as written, so every renderer can leave it verbatim (Telegram,
Slack and Discord link a bare URL themselves).

Not markdown-it's own linkify (`linkify-it-py`): it shows an address
percent-decoded (``a%20b`` as ``a b``), and its other half, which also links bare
domains and e-mail addresses, runs after emphasis has already eaten a ``_``.

Where an address ends is GitHub's rule for its bare URLs: at whitespace or ``<``,
without trailing punctuation (``.,:;!?*_~'"``, and "…", ``”`` and ``’``, which are not GitHub's: a line
cut short ends with the one, `gateway.excerpt`, and a quote, the gateway's own “…” included, with the others)
or a closing bracket it did not open, so
``(see https://x.org/a)``, ``**https://x.org**`` and ``https://x.org/a…`` read as meant; nor (`_closed_in`) at
markers closing a style opened before it, with text glued after them: ``**https://x.org/**を参照`` is bold around
``https://x.org/``. Nor is
it GitHub's that CJK punctuation (``。，、：（）「」``, the ideographic and full-width forms) ends an
address anywhere: Chinese and Japanese put no space after one, so ``见https://x.org，然后…`` would
otherwise link the rest of the sentence.

An address between ``<>`` (CommonMark's autolink) is shown as written too: markdown-it's own
text for it is percent-decoded (``a%20b`` as ``a b``), its link target percent-encoded (so an
address with ``Москва`` in it showed as ``%D0%9C…``) and, for an e-mail address, ``mailto:…``.
`autolink` keeps the target markdown-it makes and gives the link the text between the brackets.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from urllib.parse import quote

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline import autolink as _autolink
from markdown_it.rules_inline.state_inline import Delimiter

MARKUP = "linkify"
_SCHEME = re.compile(r"(?:^|[^A-Za-z0-9+.-])(https?)$", re.IGNORECASE)
_SCHEME_START = re.compile(r"(?:(?<![A-Za-z0-9+.\\-])|(?<=\\[A-Za-z0-9]))(https?):", re.IGNORECASE)
"""`_SCHEME` in a line of text: a backslash before a letter or digit is a markdown-it escape (the ``h`` of
``\\https`` taken along, the ``a`` of ``\\ahttps`` read apart from the address)."""
_SCHEME_TAIL = len("xhttps")
"""Enough of the text before a colon to tell a scheme and the character before it."""
# CJK text puts no space after an address: its punctuation (ideographic, and the full-width forms of
# ASCII's, not their letters or digits) ends one, or "https://x.org，然后点击" would link the sentence.
_TAKEN = r"[^\s<>`\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]+"
_REST = re.compile("//" + _TAKEN)
_TAKEN_ON = re.compile(_TAKEN)
_TRAILING = ".,:;!?*_~'\"…”’"
_PAIRS = {")": "(", "]": "["}


def _trimmed(url: str) -> str:
    while url:
        last = url[-1]
        if last in _TRAILING or (last in _PAIRS and url.count(last) > url.count(_PAIRS[last])):
            url = url[:-1]
        else:
            break
    return url


def _linked(url: str, scheme: str) -> bool:
    """Whether ``url`` (read from ``scheme``) is an address: more than ``https://``, invisible marks aside."""
    return len(url) - len(marks_at_end(url)) > len(scheme) + 3


def ends_before(address: str, text: str, pos: int) -> bool:
    """Whether ``address`` written right before ``text[pos:]`` is read as ending where it does: what follows is
    whitespace, or only punctuation an address leaves out (the ``*`` closing ``*see https://x.org*``)."""
    taken = _TAKEN_ON.match(text, pos)
    return taken is None or _trimmed(address + taken.group()) == _trimmed(address)


def spans(line: str) -> Iterator[tuple[int, int, bool]]:
    """Where `bare_url` reads on from an ``https://`` in ``line``, text whose markup is escaped but for these (a
    backslash stays before a letter): the start and end of each, its trailing punctuation included, and whether
    that leaves an address (not in "`https://`" or ``https://**``). The caller escaping the line leaves an address
    as written (`gateway.excerpt.literal`): a backslash there would join it, as one makes ``https://\\`` one."""
    at = 0
    while (scheme := _SCHEME_START.search(line, at)) is not None:
        at = scheme.end()
        if line.startswith("//", at):
            rest = _REST.match(line, at)
            at = rest.end() if rest else at + 2
            url = _trimmed(scheme.group(1) + ":" + rest.group()) if rest else ""
            yield scheme.start(), at, _linked(url, scheme.group(1))


_STYLE_RUN = re.compile(r"\*+|_+|~~+")
"""Runs of markers that may close a style: markdown-it's strikethrough takes ``~`` in pairs only."""


def _pair(opener: Delimiter, closer_opens: bool, closer_length: int) -> bool:
    """Whether a run that may close (of ``closer_length``, which may also open) closes ``opener``: CommonMark's rule
    of 3 (``*a**b*`` is one style) aside, yes; a strikethrough's length is 0, with no such rule."""
    return not ((closer_opens or opener.close) and (opener.length + closer_length) % 3 == 0
                and (opener.length % 3 or closer_length % 3))


_TRIED = 8
"""How many of its marker's last openers a closer tries (the rule of 3 may pass one by): markdown-it tries all down
to a bound it keeps, which reading on from each address would make quadratic in a line of unclosed openers."""


class _Unclosed:
    """The delimiters markdown-it has read so far of an inline text (``*``, ``_``, a ``~~``) that open a style none
    closes, as markdown-it pairs them: a closer closes the last opener of its marker that it may (`_pair`), and
    the openers between them close nothing after (``*a _b* c_``). Read on from where it last stopped: a line of
    many addresses and styles would otherwise be read from its start at each."""

    def __init__(self, delimiters: list[Delimiter]) -> None:
        self.delimiters, self.read = delimiters, 0
        self.openers: list[Delimiter] = []
        self.at: dict[int, list[int]] = {}  # a marker's places in `openers`, in order

    def opener(self, marker: int, opens: bool, length: int) -> int | None:
        """The place in `openers` of the one a run of ``marker`` that may close closes, if any."""
        for place in reversed(self.at.get(marker, [])[-_TRIED:]):
            if _pair(self.openers[place], opens, length):
                return place
        return None

    def read_on(self) -> None:
        # A run's markers close none of its own (``**`` between two words): its openers count after it. Each rule
        # pushes a whole run, one delimiter a marker (a pair of ``~``), one text token each.
        run: list[Delimiter] = []
        last: Delimiter | None = None
        for delimiter in self.delimiters[self.read:]:
            if last is not None and (delimiter.marker != last.marker or delimiter.token != last.token + 1):
                self._opened(run)
            last = delimiter
            place = self.opener(delimiter.marker, delimiter.open, delimiter.length) if delimiter.close else None
            if place is not None:
                del self.openers[place:]
                for places in self.at.values():
                    while places and places[-1] >= place:
                        places.pop()
            elif delimiter.open:
                run.append(delimiter)
        self._opened(run)
        self.read = len(self.delimiters)

    def _opened(self, run: list[Delimiter]) -> None:
        for delimiter in run:
            self.at.setdefault(delimiter.marker, []).append(len(self.openers))
            self.openers.append(delimiter)
        run.clear()


def _closed_in(state: StateInline, start: int, url: str) -> str:
    """``url``, read at ``start``, ending before the markers in it that close a style opened before it: in
    ``**https://x.org/**を参照`` the ``**`` close the bold, as they do in ``**https://x.org/**, see``, and what
    follows is text, not a part of the link's address. A ``*``, ``_`` or ``~`` in an address that closes no
    style stays its own (``https://x.org/a_b``, ``_see https://x.org/a_b_``)."""
    run = _STYLE_RUN.search(url, url.index("//"))
    if run is None:
        return url
    # Kept with the state, which markdown-it makes for each inline text; a link's text has delimiters of its own.
    unclosed = state.__dict__.get("_bare_urls_unclosed")
    if unclosed is None or unclosed.delimiters is not state.delimiters:
        unclosed = state.__dict__["_bare_urls_unclosed"] = _Unclosed(state.delimiters)
    unclosed.read_on()
    while run is not None:
        marker = run.group()[0]
        if unclosed.at.get(ord(marker)):
            scanned = state.scanDelims(start + run.start(), marker != "_")
            if scanned.can_close and unclosed.opener(ord(marker), scanned.can_open, len(run.group())) is not None:
                return _trimmed(url[:run.start()])
        run = _STYLE_RUN.search(url, run.end())
    return url


def bare_url(state: StateInline, silent: bool) -> bool:
    """At the ``:`` of ``https://``, with the scheme just read as text: the address as a link."""
    if state.linkLevel > 0 or state.src[state.pos] != ":":
        return False
    # Only the pending text's tail: searching all of it at every colon took minutes for a long line of
    # them (a minified JSON, a log), which pends as one run of text.
    scheme = _SCHEME.search(state.pending[-_SCHEME_TAIL:])
    rest = _REST.match(state.src, state.pos + 1, state.posMax)
    if scheme is None or rest is None:
        return False
    url = _closed_in(state, state.pos - len(scheme.group(1)), _trimmed(scheme.group(1) + ":" + rest.group()))
    if not _linked(url, scheme.group(1)):
        return False
    if not silent:
        state.pending = state.pending[: -len(scheme.group(1))]
        token = state.push("link_open", "a", 1)
        token.attrs = {"href": url}
        token.markup = MARKUP
        token.info = "auto"
        state.push("text", "", 0).content = url
        state.push("link_close", "a", -1).markup = MARKUP
    state.pos += len(url) - len(scheme.group(1))
    return True


def autolink(state: StateInline, silent: bool) -> bool:
    """markdown-it's autolink, its text the address as written between the brackets."""
    start = state.pos
    if not _autolink(state, silent):
        return False
    if not silent:
        state.tokens[-2].content = state.src[start + 1:state.pos - 1]
    return True


def enable(md: MarkdownIt) -> MarkdownIt:
    """Adds the bare URL rule to ``md`` (before every rule but plain text's), and shows autolinks as written."""
    md.inline.ruler.after("text", "bare_url", bare_url)
    md.inline.ruler.at("autolink", autolink)
    return md


_OWN_FORMAT = re.compile("[\u200c\u200d\U000e0000-\U000e007f]")
"""Format characters that are an address's own at its end: a joiner ends the word before it (a Malayalam word
written with a virama and a zero-width joiner, an Indic half form; Telegram too reads one into an address), and tag
characters end the emoji they make (the flag of Scotland)."""


def marks_at_end(address: str) -> str:
    """The invisible format characters (Unicode's Cf, but `_OWN_FORMAT`) at the end of ``address``, which Markdown
    reads into it: a right-to-left mark after an address in Hebrew or Arabic, a zero-width space, a word joiner. No
    part of the page's address, they follow its link on every platform."""
    end = len(address)
    while end and unicodedata.category(address[end - 1]) == "Cf" and not _OWN_FORMAT.match(address[end - 1]):
        end -= 1
    return address[end:]


_DIRECTION = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Unicode's direction controls: embeddings, overrides and isolates and their ends, each laying the text after it
out otherwise (a right-to-left override, U+202E, showed ``https://\\u202emoc.elgoog.www@evil.example/`` as
``https://elpmaxe.live@www.google.com/``), and the marks, strong, which turn round what is between two of them
(``https://5.6.7.8\\u200f@1.2.3.4/\\u200fx`` showed as ``https://5.6.7.8/1.2.3.4@x``). The web chat page shows
an address's as `as_address` does."""
_TURNING = re.compile("[\u202a-\u202e\u2066-\u2069]")
"""`_DIRECTION` but the marks: what turns round the text after it by itself."""
_OPENS = re.compile("[\u202a\u202b\u202d\u202e\u2066-\u2068]")
_EMBEDDING_OR_ISOLATE = re.compile("[\n\u202a-\u202e\u2066-\u2069]")
"""What opens or closes an embedding, override or isolate, and a line feed, which ends all that are open: to the
bidirectional algorithm it ends a paragraph, and the platforms' apps lay out each line so (a browser too, a line
break being a paragraph break to CSS). Not the algorithm's other paragraph separators (U+2029, U+001C, …), which
an app may show as no break at all."""
_ISOLATE_OPENS, _PDF, _PDI = "\u2066\u2067\u2068", "\u202c", "\u2069"
_ADDRESS_FACE = re.compile(r"\s*https?://", re.IGNORECASE)
ISOLATE_START, ISOLATE_END = "\ufdd6", "\ufdd7"
"""Around a link as a renderer writes it, until the message before it is known (`isolated`): noncharacters, as
the renderers' other marks are."""
_ISOLATED = re.compile(f"{ISOLATE_START}([^{ISOLATE_START}{ISOLATE_END}]*){ISOLATE_END}")


def as_address(written: str, *, marks: bool = True) -> str:
    """``written``, an address or part of one, as a browser's address bar shows it: its direction controls
    (`_DIRECTION`) percent-encoded, all else as written; as its link goes to, the same. ``marks``: the marks
    too, else only what turns round the text after it (`_TURNING`): a link's target, which no one reads, keeps
    its marks, as Markdown reads them."""
    return (_DIRECTION if marks else _TURNING).sub(lambda m: quote(m.group()), written)


_UNSEEN = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
                     "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
                     "\U000e0000-\U000e0fff]")
"""Unicode's default-ignorable code points (DerivedCoreProperties.txt): the soft hyphen, zero-width spaces and
joiners, word joiners, variation selectors, fillers, direction controls: characters no font shows."""


def as_read(text: str) -> str:
    """``text`` as its reader sees it, without the characters no font shows (`_UNSEEN`): a label
    ``https\\u200b://bank.example`` reads as the address ``https://bank.example``, which a check of the text as
    written did not take it for."""
    return _UNSEEN.sub("", text)


def link_face(text: str, label: str) -> str:
    """``text``, all or part of a link's label ``label``, as the link is to show it: no direction control left to
    turn it round (`_DIRECTION`), an address's percent-encoded as its link holds them (`as_address`), other words'
    dropped (``[\\u202e/moc.elgoog.www//:sptth](https://evil.example)`` read as a link to www.google.com)."""
    if _DIRECTION.search(text) is None:
        return text
    return as_address(text) if _ADDRESS_FACE.match(label) else _DIRECTION.sub("", text)


class _Open:
    """The embeddings, overrides and isolates open at a point of a text read up to it (`read`), by the bidirectional
    algorithm's rules X1–X8: a U+202C (PDF) closes the last embedding or override if no isolate opened since, a
    U+2069 (PDI) the last isolate and all opened within it, a line feed all; a closer with nothing of its own to
    close closes nothing (``\\u202e\\u202e x \\u202c`` leaves one override open). Without the algorithm's depth
    limit (125): it ignores an opener past it and the closer that matches that, and the text stays held all the same,
    by the openers below it."""

    def __init__(self) -> None:
        self._stack: list[bool] = []  # True an isolate, False an embedding or override
        self._isolates: list[int] = []  # where in `_stack` each isolate is: a PDI finds its own at once

    def __bool__(self) -> bool:
        return bool(self._stack)

    def read(self, text: str, start: int, end: int) -> None:
        for m in _EMBEDDING_OR_ISOLATE.finditer(text, start, end):
            control = m.group()
            if control == "\n":
                self._stack.clear()
                self._isolates.clear()
            elif control == _PDI:
                if self._isolates:
                    del self._stack[self._isolates.pop():]
            elif control == _PDF:
                if self._stack and not self._stack[-1]:
                    self._stack.pop()
            else:
                if control in _ISOLATE_OPENS:
                    self._isolates.append(len(self._stack))
                self._stack.append(control in _ISOLATE_OPENS)


def isolated(rendered: str, bracketed: Callable[[str], str] = str) -> str:
    """``rendered`` with each link a renderer put between `ISOLATE_START` and `ISOLATE_END` laid out left to right
    by itself (between U+2066 and U+2069, a left-to-right isolate) where a direction embedding, override or isolate
    opened before it is still open (`_Open`): an override opened in the text before a link turned its address
    or label round, so ``\\u202eat https://evil.example/moc.elgoog.www//:sptth`` read ``https://www.google.com/…``.
    ``bracketed`` writes the link as it is to be within the isolate (Discord's bare address between ``<>``, which
    would take the U+2069 after it in, and shows no preview). Every other link stays as it was, one after a closed
    isolate or on a line after the opener's; the noncharacters go."""
    if ISOLATE_START not in rendered or _OPENS.search(rendered) is None:
        return rendered.replace(ISOLATE_START, "").replace(ISOLATE_END, "")
    opened, read = _Open(), 0

    def one(m: re.Match[str]) -> str:
        nonlocal read
        opened.read(rendered, read, m.start())
        held = bool(opened)
        # A link's own text has none (`link_face`, `as_address`), but what it has is read as it stands.
        opened.read(rendered, m.start(), m.end())
        read = m.end()
        return f"\u2066{bracketed(m.group(1))}\u2069" if held else m.group(1)

    return _ISOLATED.sub(one, rendered).replace(ISOLATE_START, "").replace(ISOLATE_END, "")
