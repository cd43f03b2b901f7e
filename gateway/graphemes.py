"""Where one character a reader sees ends: the grapheme cluster boundaries a cut must respect.

A flag is two regional indicators, a family emoji four people joined by zero-width
joiners, a thumbs-up with a skin tone two code points, an accented letter a letter and
a combining mark, a Devanagari conjunct consonants joined by a virama. Cut between
their code points and each part shows a broken piece (a lone letter for a flag, a
dotted circle for a mark). `is_boundary` follows Unicode's extended grapheme cluster
rules (UAX #29) for what chat text holds: combining and spacing marks, variation
selectors, emoji modifiers and tags, zero-width joiners, regional indicator pairs,
conjuncts, and CR LF. Hangul jamo sequences and prepended marks, rare in chat, are not
treated specially (a cut there is as before: between code points).
"""

from __future__ import annotations

import unicodedata

_ZWJ = "\u200d"
_ZWNJ = "\u200c"


def _is_regional(c: str) -> bool:
    return "\U0001f1e6" <= c <= "\U0001f1ff"


def _extends(c: str) -> bool:
    """``c`` belongs to the cluster before it (Extend, SpacingMark, ZWJ)."""
    if c in (_ZWJ, _ZWNJ):
        return True
    if "\U0001f3fb" <= c <= "\U0001f3ff" or "\U000e0020" <= c <= "\U000e007f":  # skin tones, emoji tags
        return True
    return unicodedata.category(c) in ("Mn", "Me", "Mc")


def is_boundary(text: str, i: int) -> bool:
    """Whether a cut at ``i`` (between ``text[i-1]`` and ``text[i]``) leaves every cluster whole."""
    if i <= 0 or i >= len(text):
        return True
    before, after = text[i - 1], text[i]
    if before == "\r" and after == "\n":
        return False
    if _extends(after):
        return False
    if before == _ZWJ:
        return after.isspace()  # joined to what follows (an emoji sequence); harmless elsewhere
    if unicodedata.combining(before) == 9 and unicodedata.category(after) == "Lo":
        return False  # a virama joins the next consonant into a conjunct
    if _is_regional(before) and _is_regional(after):
        run = 0
        while i - 1 - run >= 0 and _is_regional(text[i - 1 - run]):
            run += 1
        return run % 2 == 0  # indicators pair up from the start of their run
    return True
