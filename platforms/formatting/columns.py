"""How many columns a text takes in a monospace font, as a chat's code block shows it.

One per character a reader sees (a grapheme cluster, as the `regex` module's ``\\X`` matches it:
a letter with its accents, an emoji with its skin tone, a family of emoji joined by zero-width
joiners), two for a wide one: East Asian wide or full-width, an emoji shown as one (its variation
selector asks for it, ``❤️``) or a flag. A cluster of nothing but marks or format characters (a lone
zero-width space) takes none.
"""

from __future__ import annotations

import unicodedata

import regex

_CLUSTER = regex.compile(r"\X")
_REGIONAL = dict.fromkeys(range(0x1F1E6, 0x1F200))
"""The regional indicators, two of which make a flag: counted apart, as `regex` walks back over a run
of them at every cluster it matches, in time growing as the run's square (a cell of thousands of
flags took seconds)."""
_EMOJI_STYLE = "\ufe0f"


def width(text: str) -> int:
    """Columns ``text`` takes in a monospace font; see the module docstring."""
    if text.isascii():
        return len(text)
    rest = text.translate(_REGIONAL)
    flags = (len(text) - len(rest) + 1) // 2
    return 2 * flags + sum(_cluster_width(m.group()) for m in _CLUSTER.finditer(rest))


def _cluster_width(cluster: str) -> int:
    first = cluster[0]
    if unicodedata.category(first) in ("Mn", "Me", "Cf"):
        return 0
    if _EMOJI_STYLE in cluster or unicodedata.east_asian_width(first) in "WF":
        return 2
    return 1
