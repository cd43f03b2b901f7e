"""Where one character a reader sees ends: the grapheme cluster boundaries a cut must respect.

A flag is two regional indicators, a family emoji four people joined by zero-width
joiners, a thumbs-up with a skin tone two code points, an accented letter a letter and
a combining mark, a Devanagari conjunct consonants joined by a virama. Cut between
their code points and each part shows a broken piece (a lone letter for a flag, a
dotted circle for a mark). The clusters are Unicode's extended grapheme clusters
(UAX #29), as the `regex` module's ``\\X`` matches them.

`is_boundary` asks about one position without walking the text from its start: the
clusters are matched from the last printable ASCII character before it (such a
character starts a cluster, unless a rare prepended mark stands before it), looking
back at most `_REACH` code points. Text
with no such character that far back (Thai or Chinese without spaces) is matched from
there. The match sees nothing before where it starts: `regex` otherwise walks back over
a run of regional indicators to pair them up, at every match, which made a reply of
thousands of flags take minutes to split. A cut between two regional indicators is told
by how many stand before it instead: flags pair up from the run's start.
"""

from __future__ import annotations

import regex

_CLUSTER = regex.compile(r"\X")
_REACH = 256
"""Code points looked back for a position known to start a cluster."""
_AHEAD = 64
"""Code points matched past the position: enough to see the cluster that straddles it."""
_REGIONAL = "".join(map(chr, range(0x1F1E6, 0x1F200)))
"""The regional indicators, two of which make a flag."""


def is_boundary(text: str, i: int) -> bool:
    """Whether a cut at ``i`` (between ``text[i-1]`` and ``text[i]``) leaves every cluster whole."""
    if i <= 0 or i >= len(text):
        return True
    if text[i - 1] in _REGIONAL and text[i] in _REGIONAL:
        return _regional_before(text, i) % 2 == 0
    floor = max(0, i - _REACH)
    anchor = i - 1
    while anchor > floor and not " " <= text[anchor] <= "~":
        anchor -= 1
    for match in _CLUSTER.finditer(text[anchor:min(len(text), i + _AHEAD)]):
        if match.end() >= i - anchor:
            return match.end() == i - anchor
    return True


def whole_prefix(text: str, limit: int, reach: int = 16) -> str:
    """At most ``limit`` code points of ``text``'s start, ending between whole clusters where one ends in the last
    ``reach`` (a family of four with skin tones has 11); a longer cluster (a letter under hundreds of marks) is cut
    between its code points, as looking back to its start costs milliseconds a cut."""
    if len(text) <= limit:
        return text
    for cut in range(limit, max(0, limit - reach), -1):
        if is_boundary(text, cut):
            return text[:cut]
    return text[:limit]


def _regional_before(text: str, i: int) -> int:
    """How many regional indicators stand right before ``i``, counted back a stretch at a time."""
    count = 0
    while i > 0:
        stretch = text[max(0, i - _REACH):i]
        others = len(stretch.rstrip(_REGIONAL))
        count += len(stretch) - others
        if others:
            break
        i -= len(stretch)
    return count
