"""Log set-up: text or JSON lines, correlation ids, and secret redaction.

Ids (``session_id``, ``turn_id``, ``subagent_id``) live in a context variable set
by `log_context`. asyncio copies the context into every task it creates, so a
line logged by a child task started inside a turn carries the turn's ids
without the code that logs knowing about them.

Redaction rewrites each record's message and exception text before any
formatter sees it: registered secrets (the config's tokens and keys, also as a URL,
a form body or a JSON string quotes them: `_spellings`) and well-known token shapes become
``***``. Each is then cut to `MAX_TEXT_CHARS` (its start and end kept, the cut
counted), after redaction: a secret cut in two
would be matched by no mask. Then identical lines repeated within
``repeat_window`` seconds are dropped and counted, the count told as the window closes or the
handler does (`gateway.log_repeats`).
Libraries that write a line for every event they handle are held to WARNING below
DEBUG (`PER_EVENT_LOGGERS`), so a busy deployment's log grows with what matters.

What a terminal would obey is never written as it is: a text record is one line with its control
characters as escapes (`one_line`), its traceback and stack, if any, on indented lines after it
(`continued`); JSON escapes them all (C1 ones and DEL by us, JSON itself leaves them).
"""

from __future__ import annotations

import codecs
import contextlib
import contextvars
import json
import logging
import re
import string
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Literal, TextIO

from agent import active_turn
from gateway.log_repeats import DEFAULT_WINDOW, RepeatFilter

_EMPTY: Mapping[str, str] = MappingProxyType({})
_ids: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar("switchboard_log_ids", default=_EMPTY)

MASK = "***"


class _Gated:
    """A token shape's regex, tried only on a text where one of ``gates`` (a pattern or a test) finds what each of
    its matches holds (a bot token's digit, colon and 30 characters after it): the shape's regex starts at any
    digit, and tried at each took 0.03 s a megabyte of log text, where a gate, starting with a fixed string, passes
    over the text as fast as that string is found."""

    def __init__(self, regex: str, *gates: str | Callable[[str], object]) -> None:
        self._regex = re.compile(regex)
        self._gates = [gate if callable(gate) else re.compile(gate).search for gate in gates]

    def sub(self, replacement: str, text: str) -> str:
        return self._regex.sub(replacement, text) if any(gate(text) for gate in self._gates) else text


def _says_bearer(text: str) -> bool:
    return "bearer" in text.lower()


# Shapes of credentials that may reach a log line without ever being registered
# (an SDK echoing a URL, a key from the environment of a plugin).
_PATTERNS = [
    # Each starts with a character, its word boundary checked behind it: the regex engine then skips to where that
    # character is, where a pattern starting with the boundary was tried at every place in the text (0.3 s a
    # megabyte for the four).
    # An HTTP scheme is case-insensitive and may be followed by several spaces (RFC 9110), or a tab as some
    # clients write it. A pattern starting with either case of a letter is tried at each place in the text (0.01 s
    # a megabyte): tried only where the text, in lower case, holds ``bearer``.
    (_Gated(r"([Bb](?<!\w[Bb])[Ee][Aa][Rr][Ee][Rr][ \t]+)[A-Za-z0-9._~+/=-]{20,}", _says_bearer), r"\1" + MASK),
    # `Bot` is Discord's scheme; case-sensitive, so prose about bots followed by a dotted logger name or a path
    # survives.
    (re.compile(r"(B(?<!\wB)ot[ \t]+)[A-Za-z0-9._~+/=-]{20,}"), r"\1" + MASK),
    (re.compile(r"sk-(?<!\wsk-)[A-Za-z0-9_-]{16,}"), MASK),
    # A Telegram bot token stands alone or follows /bot; a number at the end of an id (an outbox key's
    # ``tc-<turn id>:card-…``) is no bot id.
    # A URL's path may hold it percent-encoded, its colon as %3A or, in a URL quoted in another, %253A (an error
    # page quoting the request); a JSON string as ``\u003a``, escaped once or twice.
    (_Gated(r"(?:(?<![\w-])|(?<=bot))[0-9]+(?::|%(?:25)?3[Aa]|\\{1,2}u003[Aa])[A-Za-z0-9_-]{30,}",
            r":(?<=[0-9]:)[A-Za-z0-9_-]{30}", r"%3[Aa](?<=[0-9]%3[Aa])[A-Za-z0-9_-]{30}",
            r"%253[Aa](?<=[0-9]%253[Aa])[A-Za-z0-9_-]{30}", r"u003[Aa](?<=\\u003[Aa])[A-Za-z0-9_-]{30}"), MASK),
    # A Discord bot token: the bot's id in base64 (a snowflake's starts M, N or O), a time and an HMAC, stood alone,
    # since `Bot` above is case-sensitive and a client or a person writes ``bot …`` or ``BOT …`` too. Tried at each
    # M, N and O, 0.005 s a megabyte: only where its time and HMAC are.
    (_Gated(r"[MNO](?<![\w.-][MNO])[A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,}",
            r"\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27}"), MASK),
    # Slack bot, user, app and refresh tokens, and a rotating one's access token (``xoxe.xoxp-1-…``)
    (re.compile(r"x(?<!\wx)(?:ox[abepr]|oxe\.xox[abpr]|app)-[A-Za-z0-9-]{8,}"), MASK),
]
MAX_TEXT_CHARS = 16_000
"""A record's message, its traceback and its stack are each cut to about this many characters
(`bounded`): an exception quoting a megabyte argument (a plugin command's, a tool's) wrote a
megabyte to the log at each failure."""
PER_EVENT_LOGGERS = ("aiogram.event", "httpx", "httpx2", "openai._base_client")
"""Loggers that write an INFO line per event: aiogram's per platform update ("Update id=… is handled. Duration …
ms"), the model client's HTTP library's per request ("HTTP Request: POST …/chat/completions"; ``httpx2`` under
openai 3) and the OpenAI SDK's per retry ("Retrying request in 0.4 seconds"). A model call that fails is logged
by the agent."""
_MIN_SECRET = 4  # shorter values would mask ordinary words all over the log
_TOKEN_REACH = 128
"""What a token shape needs to be recognised (`_PATTERNS`: at most ``Bearer `` and 20 characters, or a
bot id, its colon (at most 7 characters: ``\\\\u003a``) and 30): the margin a cut text is masked past what it
keeps, with the longest registered secret."""
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~+/=:_-%\\")
"""What a token shape's characters after its scheme are made of (``%`` and ``\\``: a bot token's colon as
``%3A`` or ``\\u003a``)."""
_TOKEN_RUN = re.compile(r"[A-Za-z0-9._~+/=:_%\\-]*")
_secrets: set[str] = set()
_longest = 0
_secrets_re: re.Pattern[str] | None = None
"""`_secrets` as one pattern, built at the first use after a registration (`_secrets_pattern`): rebuilt at each
one, the 200 secrets of a configuration with many webhook routes took seconds to register at start."""
_lock = threading.RLock()
"""Re-entrant: a collection falling inside the build (or a registration) may run a finalizer that logs (asyncio's
"Task was destroyed but it is pending!"), whose `redact` then builds the pattern in the thread that holds this."""


@contextlib.contextmanager
def log_context(**ids: object) -> Iterator[None]:
    """Attach ids to every record logged inside the block (and tasks started in it).

    Nests: an inner block adds to or overrides the outer ids and restores them on
    exit. A None value removes an id for the block.
    """
    merged = {**_ids.get(), **{k: str(v) for k, v in ids.items() if v is not None}}
    for key in [k for k, v in ids.items() if v is None]:
        merged.pop(key, None)
    token = _ids.set(MappingProxyType(merged))
    try:
        yield
    finally:
        _ids.reset(token)


def current_ids() -> Mapping[str, str]:
    return _ids.get()


def register_secret(value: str | None) -> None:
    """Mask ``value`` in every later log line. Idempotent; short values are ignored."""
    global _secrets_re, _longest
    if not value or len(value) < _MIN_SECRET:
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        _longest = max(_longest, _longest_spelling(value))
        _secrets_re = None


def _secrets_pattern() -> re.Pattern[str] | None:
    """All registered secrets as one pattern (`_alternatives`; None: none is registered), built once for all
    the secrets registered since it was last built."""
    global _secrets_re
    pattern = _secrets_re
    if pattern is None and _secrets:
        with _lock:
            if _secrets_re is None:
                _secrets_re = re.compile(_alternatives(_secrets))
            pattern = _secrets_re
    return pattern


_NEVER_QUOTED = frozenset(string.ascii_letters + string.digits)
_REPR_ESCAPE = {"\t": "t", "\n": "n", "\r": "r", "\b": "b", "\f": "f"}
"""How JSON (all five) and a repr (the first three; the others as ``\\x08``) escape a control character short."""
_BACKSLASHED = frozenset(string.punctuation + " ")
"""What an escaping writer may put a backslash before: JSON ``\\"``, ``\\\\`` and ``\\/``, a repr's ``\\'``."""
_TWICE_MORE = "(?:25){0,2}"
"""What a character percent-encoded once more (``%2F``) is, twice or three times over: ``%252F``, ``%25252F``."""
_BACKSLASH = rf"\\{{1,8}}+(?:u005[Cc]|x5[Cc])?|%{_TWICE_MORE}5[Cc]"
"""A piece of a run of backslashes as written (`_pieces`): at most eight backslashes (one escaped three times over)
taken all at once, and the code one of them may end in (``\\u005c``, ``\\\\u005c``, ``\\x5c``); or a
percent-encoded one."""
_Form = tuple[str, str]
"""A form's first character and a pattern of the rest: the regex engine skips a form at its first character."""


def _alternatives(secrets: Iterable[str]) -> str:
    """A pattern of the `_spellings` of ``secrets``, grouped by the character each spelling starts with, longest
    secret first within a group (so a secret containing another is masked whole). The regex engine then passes
    over a character no spelling starts with at once and elsewhere tries only that character's group, where one
    alternative per secret tried every secret at every character: with 200 secrets, a second or more a megabyte."""
    return "|".join(f"{re.escape(first)}(?:{'|'.join(group)})" for first, group in _groups(secrets).items())


def _groups(secrets: Iterable[str]) -> dict[str, list[str]]:
    """The `_spellings` of ``secrets`` by the character each starts with, a pattern of the rest of each."""
    groups: dict[str, list[str]] = {}
    for secret in sorted(secrets, key=len, reverse=True):
        first_piece, *pieces = _pieces(secret)
        rest = "".join(_either(forms) for forms in pieces)
        for first, then in first_piece:
            groups.setdefault(first, []).append(then + rest)
    return groups


_group_forms: tuple[re.Pattern[str] | None, dict[str, list[re.Pattern[str]]]] = (None, {})
"""The last pattern `_secrets_pattern` built and the spellings of each of its groups apart (`_search`), compiled at
first need. Not a dictionary by pattern: a pattern's hash is computed anew from all of its code at each look-up."""


def _search(pattern: re.Pattern[str], text: str, lo: int, hi: int | None = None) -> tuple[int, int] | None:
    """Where the first spelling of a registered secret in ``text[lo:hi]`` starts, and where the longest one starting
    there ends. The pattern stops at the first of its alternatives that matches, longest secret first; but a
    secret's spelling may be a start of a shorter one's (``a\\\\\\\\bcdQ`` of ``a\\bcdQRS`` escaped
    twice), whose tail the mask then left to show."""
    hi = len(text) if hi is None else hi
    found = pattern.search(text, lo, hi)
    if found is None:
        return None
    start, end = found.span()
    for form in _forms_starting(pattern, text[start]):
        if (longer := form.match(text, start, hi)) and longer.end() > end:
            end = longer.end()
    return start, end


def _forms_starting(pattern: re.Pattern[str], first: str) -> list[re.Pattern[str]]:
    """The spellings of ``pattern`` starting with ``first``, each apart; none where there is only one."""
    global _group_forms
    built, groups = _group_forms
    forms = groups.get(first) if built is pattern else None
    if forms is None:
        with _lock:
            thens = _groups(_secrets).get(first, [])
            forms = [re.compile(f"{re.escape(first)}(?:{then})") for then in thens] if len(thens) > 1 else []
            built, groups = _group_forms
            if built is not pattern:
                built, groups = _group_forms = (pattern, {})
            groups[first] = forms
    return forms


def _spellings(value: str) -> str:
    """A pattern of ``value`` as written and as a URL or a JSON string may quote it, wholly or in part: each
    character but a letter or digit as itself or

    - percent-encoded (UTF-8, either case of hex), up to three times over (``%252F``: a URL in another's query), a
      space also as ``+`` or, that quoted, ``%2B``. Encoders differ in what they leave: ``quote`` keeps ``/``,
      ``quote_plus`` and a form body write a space as ``+``, aiohttp's query keeps ``/``, ``:`` and ``@``,
      httpx's path ``+`` and ``=``;
    - escaped as a JSON string or a repr writes it, up to three times over (a JSON body quoted in an error that
      is itself JSON, and that in a log shipper's JSON): after one to seven backslashes (``\\"``, ``\\\\``,
      ``\\/`` as some encoders write a slash), or as ``\\u`` and four hex digits, either case
      (``ensure_ascii``'s ``\\u00e9``, Go's ``\\u0026`` for ``&``), a character beyond the BMP as its surrogate
      pair, or as a repr's ``\\x`` or ``\\U`` code.

    Every mix is one pattern, not a literal per form (there are 2 to the power of the characters that may be
    quoted). Its cost grows with the length of ``value``, not with the number of its backslashes (`_pieces`)."""
    return "".join(_either(forms) for forms in _pieces(value))


def _either(forms: list[_Form]) -> str:
    alternatives = [re.escape(first) + then for first, then in forms]
    return alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"


def _pieces(value: str) -> list[list[_Form]]:
    """The forms of each character of ``value``, a run of backslashes and the character after it being one
    piece: ``k`` backslashes written, with the character's own escaping ones, are one to ``k + 1`` `_BACKSLASH`
    pieces, whatever each of them is written as (``\\\\`` and ``\\u005c`` in one run: a writer escaping its
    input's backslashes, and an escape of a backslash another wrote). Matched a backslash at a time, the
    regex engine tried every way of sharing out a run of backslashes in the text among a secret's: about 4 to the
    power of their number wherever a near miss of the secret was written. A run's spelling is not one of exactly
    ``k`` backslashes: a few more or fewer backslashes in a spelling of a secret are masked as it is. Every form
    ends in a character other than a backslash but that of a run ending ``value``: where the form of the next
    piece starts is never in doubt."""
    pieces = []
    for piece in re.findall(r"\\+.?|.", value, re.DOTALL):
        char = piece.lstrip("\\")
        run = len(piece) - len(char)
        if not run:
            pieces.append(_escaped(char))
            continue
        # The character's forms without the backslashes before them, which the run has taken.
        after = _either(_merged([(first, then) for _, _, first, then in _tails(char)])) if char else ""
        rest = f"(?:{_BACKSLASH}){{0,{run}}}{after}"
        pieces.append([("\\", rf"\\{{0,7}}+(?:u005[Cc]|x5[Cc])?{rest}"), ("%", f"{_TWICE_MORE}5[Cc]{rest}")])
    return pieces


def _escaped(char: str) -> list[_Form]:
    """The forms of ``char``, each after as many backslashes as its escaping, up to three times over, writes."""
    forms = []
    for low, high, first, then in _tails(char):
        if low == 0:
            forms.append((first, then))
        if high:
            forms.append(("\\", _backslashes(max(low, 1) - 1, high - 1) + re.escape(first) + then))
    return _merged(forms)


def _tails(char: str) -> list[tuple[int, int, str, str]]:
    """How ``char`` may be written: each form as the fewest and the most backslashes before it, the character
    after them and a pattern of the rest."""
    if char in _NEVER_QUOTED:
        return [(0, 0, char, "")]
    encoded = _utf8_bytes(char)
    # Percent-encoded first: ``%`` as ``%25`` is then tried before ``%`` as itself, so that a secret ending in one
    # leaves no ``25`` after its mask.
    tails = [(0, 0, "%", "%".join(f"{_TWICE_MORE}{_hex(byte)}" for byte in encoded))] if encoded else []
    first_unit, *units = _utf16_units(char)
    tails += [(0, 7 if char in _BACKSLASHED else 0, char, ""),
              (1, 4, "u", _hex(first_unit, 4) + "".join(rf"\\{{1,4}}u{_hex(unit, 4)}" for unit in units))]
    if code := _REPR_ESCAPE.get(char):
        tails.append((1, 4, code, ""))  # JSON's and a repr's ``\t``
    if ord(char) < 0x100:
        tails.append((1, 4, "x", _hex(ord(char))))  # a repr's ``\xa0`` (a no-break space), ``\x08``
    elif ord(char) >= 0x10000:
        tails.append((1, 4, "U", _hex(ord(char), 8)))  # a repr's ``\U000e0041``: one it does not print
    if char == " ":
        tails += [(0, 0, "+", ""), (0, 0, "%", f"{_TWICE_MORE}2[Bb]")]
    return tails


def _backslashes(fewest: int, most: int) -> str:
    """A pattern of ``fewest`` to ``most`` backslashes, taken all at once: a possessive count is tried once."""
    if most == 0:
        return ""
    return rf"\\{{{most}}}" if fewest == most else rf"\\{{{fewest},{most}}}+"


def _merged(forms: list[_Form]) -> list[_Form]:
    """``forms`` with those starting with the same character as one."""
    by_first: dict[str, list[str]] = {}
    for first, then in forms:
        by_first.setdefault(first, []).append(then)
    return [(first, thens[0] if len(thens) == 1 else f"(?:{'|'.join(thens)})") for first, thens in by_first.items()]


def _longest_spelling(value: str) -> int:
    """The most characters `_spellings` of ``value`` matches: every character that may be quoted quoted three
    times over (seven per UTF-8 byte) or escaped so (nine per UTF-16 unit), whichever is longer; a backslash two
    `_BACKSLASH` pieces of thirteen (one for the escaping of the character after its run)."""
    return sum(1 if char in _NEVER_QUOTED else 26 if char == "\\" else
               max(7 * len(_utf8_bytes(char)), 9 * len(_utf16_units(char))) for char in value)


def _utf8_bytes(char: str) -> bytes:
    """``char`` as a URL quotes it; a byte the environment could not decode (a surrogate escape) as that byte,
    and nothing for another lone surrogate, which no URL holds."""
    try:
        return char.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return b""


def _utf16_units(char: str) -> list[int]:
    """``char`` as JSON's ``\\u`` escapes count it: a character beyond the BMP as two surrogates."""
    code = ord(char)
    if code < 0x10000:
        return [code]
    code -= 0x10000
    return [0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)]


def _hex(number: int, digits: int = 2) -> str:
    return "".join(f"[{d}{d.lower()}]" if d.isalpha() else d for d in f"{number:0{digits}X}")


def redact(text: str) -> str:
    """``text`` with registered secrets and token-shaped strings replaced by ``***``."""
    pattern = _secrets_pattern()
    if pattern is not None:
        parts, at = [], 0
        while (span := _search(pattern, text, at)) is not None:
            parts += [text[at:span[0]], MASK]
            at = span[1]
        text = "".join(parts) + text[at:] if parts else text
    for regex, replacement in _PATTERNS:
        text = regex.sub(replacement, text)
    return text


def redacted_cut(text: str | None, limit: int, cut: Callable[[str, int], str], *, read: int | None = None) -> str:
    """``text`` on one line (None: empty) with secrets masked (`redact`), then ``cut`` to ``limit``: the
    goals, summaries and errors ``/agents`` and the ledger's messages show. Masked before the cut: a
    secret cut in two would show its first half, which no mask matches. ``read``: only the first that
    many characters of the masked text are given to ``cut``, and only they and a margin are joined and
    masked (`_masked_start`): a summary of 24,000 characters, shown cut to 200, for each of fifty children."""
    words = text or ""
    if read is None:
        return cut(redact(" ".join(words.split())), limit)
    head, _, _ = _masked_start(words, read, one_line=True)
    return cut(head, limit)


def bounded(text: str) -> str:
    """``text`` when it has at most `MAX_TEXT_CHARS` characters, else its start and its end (a
    traceback's last line names the exception) around a note of how many characters were cut."""
    if len(text) <= MAX_TEXT_CHARS:
        return text
    keep = MAX_TEXT_CHARS // 2
    return f"{text[:keep]} …[{len(text) - 2 * keep} characters cut]… {text[-keep:]}"


def redacted_bounded(text: str) -> str:
    """`bounded` of `redact` of ``text``, masking only the start and the end it keeps and a margin past each:
    masking all of a tool result of megabytes held the event loop a second. The note then counts the text's
    own characters between the two parts: more than are hidden when a kept part had a mask in it."""
    if len(text) <= 4 * MAX_TEXT_CHARS:
        return bounded(redact(text))
    keep = MAX_TEXT_CHARS // 2
    head, head_end, whole = _masked_start(text, keep)
    if not whole:
        tail, tail_start, whole = _masked_end(text, keep)
        whole = whole or tail_start < head_end  # masks shortened the text so much that the two parts meet
    if whole:
        return bounded(redact(text))
    return f"{head} …[{len(text) - 2 * keep} characters cut]… {tail}"


def _margin() -> int:
    return _longest + _TOKEN_REACH


def _masked_start(text: str, keep: int, *, one_line: bool = False) -> tuple[str, int, bool]:
    """The first ``keep`` characters of `redact` of ``text`` (its words joined by single spaces if
    ``one_line``), the length of the start of ``text`` masked for them, and whether that was all of it.
    What is masked runs a margin past what is kept: a mask or token shape crossing the end of what is
    masked may go unmatched, so only what lies a margin before that end (a mask only shortens) is kept."""
    margin = _margin()
    size = keep + margin
    while True:
        head = text[:size]
        masked = redact(" ".join(head.split()) if one_line else head)
        if size >= len(text) or len(masked) - margin >= keep:
            return masked[:keep], size, size >= len(text)
        size *= 2


def _masked_end(text: str, keep: int) -> tuple[str, int, bool]:
    """The last ``keep`` characters of `redact` of ``text``, where the part masked for them starts, and
    whether that was all of it. What is masked starts where it reads as the whole text would (`_clear_start`),
    and a margin before what is kept. Where no such place is found within the margin (a run of token characters
    longer than it crossing the start), what crosses the start is masked whole: its start, what a token shape is
    recognised by, is not read."""
    margin = _margin()
    size = keep + margin
    while size < len(text):
        cut = len(text) - size
        start = _clear_start(text, cut, max(0, cut - margin))
        if start is None:
            end = _past_secrets(text, cut, _TOKEN_RUN.match(text, cut).end())
            scheme = _scheme_start(text, end, spaced=False)
            return redact(MASK + text[scheme:_spaced(text, end)] + text[end:])[-keep:], cut, False
        masked = redact(text[start:])
        if len(masked) >= keep + (cut - start) + margin:
            return masked[-keep:], start, False
        size *= 2
    return redact(text)[-keep:], 0, True


def _clear_start(text: str, at: int, limit: int) -> int | None:
    """The last place at or before ``at``, and not before ``limit`` (None: there is none), where masking may
    start as if the text began there: outside a run of token characters, its scheme (`_scheme_start`) and any
    registered secret. A secret masked just before a run (``…hunter2sk-…``) is what lets a token shape start
    there: masking from inside the secret would leave all of that run, however long, to show."""
    pattern = _secrets_pattern()
    while True:
        start = at
        while start > limit and text[start - 1] in _TOKEN_CHARS:
            start -= 1
        if start > 0 and text[start - 1] in _TOKEN_CHARS:
            return None
        start = _scheme_start(text, start)
        lo = max(0, start - _longest + 1)
        while pattern is not None and (found := _search(pattern, text, lo, start + _longest)) and found[0] < start:
            if found[1] > start:
                start = found[0]
                break
            lo = found[0] + 1
        if start == at:
            return start
        if start < limit:
            return None
        at = start


def _spaced(text: str, end: int) -> int:
    """Where the run of spaces and tabs ending at ``end`` in ``text`` starts."""
    while end > 0 and text[end - 1] in " \t":
        end -= 1
    return end


def _scheme_start(text: str, start: int, *, spaced: bool = True) -> int:
    """Where the ``Bearer`` (any case) or ``Bot`` ending ``text[:start]`` starts, with the spaces and tabs after it
    (``spaced``: at least one), or ``start``: a token shape after it is recognised by it."""
    word_end = _spaced(text, start)
    if spaced and word_end == start:
        return start
    if text[max(0, word_end - 6):word_end].lower() == "bearer":
        return word_end - 6
    return word_end - 3 if text.endswith("Bot", 0, word_end) else start


def _past_secrets(text: str, start: int, end: int) -> int:
    """``end``, or past the end of each registered secret starting in ``text[start:end]`` and crossing
    ``end``: masking ``text[start:end]`` alone would leave the rest of such a secret (one with a ``$`` or a
    space in it) to show."""
    pattern, lo = _secrets_pattern(), max(start, end - _longest + 1)
    while pattern is not None and (found := _search(pattern, text, lo, end + _longest)) and found[0] < end:
        end, lo = max(end, found[1]), found[0] + 1
    return end


class ContextFilter(logging.Filter):
    """Copies the current ids onto the record as ``record.ids``."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "ids"):
            record.ids = {**_turn_ids(), **_ids.get()}
        return True


def _turn_ids() -> dict[str, str]:
    """Ids of the agent turn running in this context, so agent and lifecycle code
    (which know nothing of logging set-up) log with them too."""
    turn = active_turn()
    if turn is None:
        return {}
    session = turn.session
    parent = session.metadata.get("parent_session_id")
    if parent:  # a child: its session id is its subagent id
        return {"session_id": str(parent), "subagent_id": session.session_id, "turn_id": turn.turn_id}
    return {"session_id": session.session_id, "turn_id": turn.turn_id}


class RedactionFilter(logging.Filter):
    """Replaces the record's message, exception text and stack by their redacted form, `bounded`. Masked
    whole, not as `redacted_bounded` does: the log is where a secret would last longest, and a line that
    long is rare."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception as exc:
            # Arguments that do not fit the message (a bug in the call): left as they were, the record
            # raised out of the logging call itself from the repeat filter, ending the turn or task that
            # logged, and logging's own error report printed the arguments, secrets and all, on stderr.
            message = (f"{record.msg} % {record.args!r} (the arguments do not fit the message: "
                       f"{type(exc).__name__}: {exc}; logged at {record.pathname}:{record.lineno})")
        record.msg, record.args = bounded(redact(message)), None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = bounded(redact(record.exc_text))
        if record.stack_info:
            record.stack_info = bounded(redact(record.stack_info))
        return True


_SHOWN_OTHERWISE = "\u2028\u2029\u202a-\u202e\u2066-\u2069"
"""The line and paragraph separators, which editors and Python's ``splitlines`` break a line at, and the
direction overrides and isolates, which show the rest of a line reversed in a browser's log viewer."""
_CONTROLS = re.compile(f"[\\x00-\\x08\\x0a-\\x1f\\x7f-\\x9f{_SHOWN_OTHERWISE}]")
"""C0 and C1 controls but tab, and DEL: what a terminal showing the log (`switchboard chat --verbose`,
`switchboard run`, ``journalctl`` with raw bytes) would obey, and a line break that would start a line of
its own; and `_SHOWN_OTHERWISE`."""
_CONTROLS_BUT_LINES = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_SHOWN_OTHERWISE}]")
_ESCAPES = {"\n": "\\n", "\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return _ESCAPES.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def one_line(text: str) -> str:
    """``text`` with its control characters but tab written as Python escapes (ESC as ``\\x1b``, a line break
    as ``\\n``): a message quoting a model's, a tool's or a user's text could otherwise clear the operator's
    terminal, retitle its window, hide lines, or start a line of its own that reads as another record
    (``\\n2026-11-30 12:00:00 ERROR …``)."""
    return _CONTROLS.sub(_escape, text)


def continued(text: str) -> str:
    """A traceback or stack as lines of a text record after its first: their control characters escaped but the
    line breaks, which are the traceback's own, and each line indented by two spaces, an exception's message
    included, so that only the first line of a record starts at the margin."""
    return "\n".join(f"  {line}" for line in _CONTROLS_BUT_LINES.sub(_escape, text).split("\n"))


class TextFormatter(logging.Formatter):
    """``2026-11-30 12:00:00 INFO gateway.x: message session=… turn=… subagent=…``, on one line (`one_line`),
    then the traceback and the stack, if any, indented (`continued`)."""

    def __init__(self, fmt: str = "%(asctime)s %(levelname)s %(name)s: %(message)s") -> None:
        super().__init__(fmt, "%Y-%m-%d %H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        # `logging.Formatter.format`'s, but with the traceback and stack `continued`, and without writing them
        # back onto the record, which other handlers (the console's recent errors, an embedder's) share.
        record.message = record.getMessage()
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        text = self.formatMessage(record)
        trace = record.exc_text or (self.formatException(record.exc_info) if record.exc_info else "")
        if trace:
            text += "\n" + continued(trace)
        if record.stack_info:
            text += "\n" + continued(self.formatStack(record.stack_info))
        return text

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        ids = getattr(record, "ids", {})
        suffix = " ".join(f"{key.removesuffix('_id')}={value}" for key, value in ids.items())
        return one_line(f"{line} {suffix}" if suffix else line)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts (UTC, ISO 8601), level, logger, msg, ids, exc. ``ascii_only``: every other
    character as a JSON escape, for a stream that is not UTF-8 (`setup_logging`)."""

    def __init__(self, *, ascii_only: bool = False) -> None:
        super().__init__()
        self._ascii_only = ascii_only

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
            **getattr(record, "ids", {}),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exc"] = record.exc_text
        if record.stack_info:
            entry["stack"] = record.stack_info
        # JSON escapes C0 controls but not DEL and C1 ones (U+009B is CSI to a terminal showing the line), nor
        # `_SHOWN_OTHERWISE`.
        return _C1.sub(_json_escape, json.dumps(entry, ensure_ascii=self._ascii_only, default=str))


_C1 = re.compile(f"[\\x7f-\\x9f{_SHOWN_OTHERWISE}]")


def _json_escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def setup_logging(
    level: str,
    fmt: Literal["text", "json"] = "text",
    stream: TextIO | None = None,
    *,
    secrets: Iterable[str] = (),
    repeat_window: float = DEFAULT_WINDOW,
) -> logging.Handler:
    """Send every log record to ``stream`` (stderr by default) in ``fmt``.

    Replaces the handler a previous call installed, so calling it again (tests,
    a reload) does not duplicate lines; it stays until removed (`logging_installed`
    removes it at the end of a block). ``secrets`` are registered for redaction;
    pass `gateway.config.config_secrets(config)`. A line identical to one written
    less than ``repeat_window`` seconds ago is dropped and counted (0 keeps all), the count told
    once the window closes, or as the handler is closed.
    `PER_EVENT_LOGGERS` log only warnings and errors unless ``level`` is DEBUG.
    """
    for value in secrets:
        register_secret(value)
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    if fmt not in ("text", "json"):
        raise ValueError(f"unknown log format {fmt!r}")
    handler = _LogStream(stream if stream is not None else sys.stderr)
    if numeric > logging.DEBUG:
        handler.addFilter(_per_event_below_warning)
    handler.addFilter(ContextFilter())
    handler.addFilter(RedactionFilter())
    # A count line names its exception, masked as the first line's traceback was by the filter before.
    handler.repeats = RepeatFilter(repeat_window, emit=handler.emit_counted, mask=lambda text: bounded(redact(text)))
    handler.addFilter(handler.repeats)
    handler.setFormatter(JsonFormatter(ascii_only=not _utf8(handler.stream)) if fmt == "json" else TextFormatter())
    handler._switchboard = True  # type: ignore[attr-defined]  # marks the handler a later call replaces
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_switchboard", False)]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(numeric)
    _redact_last_resort()
    return handler


def _per_event_below_warning(record: logging.LogRecord) -> bool:
    """Whether ``record`` is no INFO or DEBUG line of `PER_EVENT_LOGGERS`. A filter on our handler rather than
    the loggers' levels: those are the process's, which a caller's handler (pytest's capture, an embedder's)
    shares, and which a `setup_logging` not undone by `logging_installed` left changed for good."""
    name = record.name
    return record.levelno >= logging.WARNING or not (name in PER_EVENT_LOGGERS or name.startswith(_PER_EVENT_PREFIXES))


_PER_EVENT_PREFIXES = tuple(f"{name}." for name in PER_EVENT_LOGGERS)


def _utf8(stream: TextIO) -> bool:
    """Whether ``stream`` writes UTF-8 (or has no encoding of its own, as a test's ``StringIO``). JSON lines to a
    stderr that does not (a Latin-1 or ASCII locale) were no JSON: an é as the byte E9, an emoji escaped by Python's
    ``backslashreplace`` as ``\\U0001f600``, which JSON has no such escape for; a log shipper dropped the line."""
    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "utf-8").name == "utf-8"
    except LookupError:
        return False


def _redact_last_resort() -> None:
    """Redact what Python's last-resort handler writes too, and show its control characters as the text
    format does: a line logged once no handler is left (a finaliser at interpreter exit, after
    `logging_installed` has removed ours) goes to stderr through it, secrets and all."""
    last = logging.lastResort
    if last is not None and not any(isinstance(f, RedactionFilter) for f in last.filters):
        last.addFilter(RedactionFilter())
    if last is not None and last.formatter is None:
        last.setFormatter(TextFormatter("%(message)s"))  # bare, as Python writes it, but shown, never obeyed


class _LogStream(logging.StreamHandler):
    """A handler whose stream may stop taking lines (a full disk under `switchboard chat`'s log file,
    a closed pipe): said once on the process's own stderr, then lines are dropped, never a
    "--- Logging error ---" traceback per line across the chat."""

    _told = False
    repeats: RepeatFilter | None = None

    def handle(self, record: logging.LogRecord) -> bool:
        # Our filters fold repeats into the message: on a copy, so that handlers after this one
        # (the console's recent errors, an embedder's) get the record as it was logged.
        return super().handle(logging.makeLogRecord(record.__dict__))

    def emit_counted(self, record: logging.LogRecord) -> None:
        """Write the repeat filter's count of a window that closed: a record our filters made, not to filter again."""
        self.acquire()
        try:
            self.emit(record)
        finally:
            self.release()

    def close(self) -> None:
        # The counts not yet told: the process, or the block that logged, is ending.
        if self.repeats is not None:
            self.repeats.close()
        super().close()

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            super().handleError(record)  # a bug in a record or a formatter: its traceback helps
            return
        if not self._told:
            self._told = True
            with contextlib.suppress(Exception):
                print(f"switchboard: cannot write the log ({error.strerror or error}); its lines are dropped",
                      file=sys.__stderr__, flush=True)


@contextlib.contextmanager
def logging_installed(
    level: str,
    fmt: Literal["text", "json"] = "text",
    stream: TextIO | None = None,
    *,
    secrets: Iterable[str] = (),
    repeat_window: float = DEFAULT_WINDOW,
) -> Iterator[logging.Handler]:
    """`setup_logging` for the length of the block. On exit the handler is removed and closed and
    the root logger's level is as it was, so a process that goes on after the block (tests, an
    embedding calling `gateway.cli.main`) keeps no handler on a stream its owner has since closed
    (every later line was a "--- Logging error ---" traceback). The stream itself is the caller's.
    A handler an earlier `setup_logging` installed is replaced for good, not restored."""
    root = logging.getLogger()
    previous = root.level
    handler = setup_logging(level, fmt, stream, secrets=secrets, repeat_window=repeat_window)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        handler.close()
        root.setLevel(previous)
