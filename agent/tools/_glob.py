"""Glob patterns over ``/``-separated relative paths, for `list_files`.

`pathlib.Path.glob` follows symlinked directories during ``**`` (before 3.13),
which could walk out of the workspace; matching walked paths ourselves keeps the
walk under our control.

Matching takes time in proportion to the path times the pattern, whatever the pattern:
the model writes it, and anyone who may talk to it can have it write ``*a*a*a…b``.
One regex for the whole pattern (``[^/]*a[^/]*a…``) tried every way of splitting a name
among its stars, for hours, holding the GIL, and so every chat of the gateway with it.
So a ``**`` is matched over whole path segments (`GlobMatch`), a run of them as one, and
within a segment each run of stars takes the first place where what follows it fits, never
looking back (as `fnmatch` does): what follows a star has a fixed length, so a later place
could only leave less of the name to the rest.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_TOKEN = re.compile(r"(\*+|\?|\[!?\]?[^\]]*\])")


class GlobMatch:
    """Whether a relative path (``a/b/c``, no empty segments) matches the pattern.

    ``*``, ``?`` and ``[...]`` stay within one path segment; a ``**`` segment spans
    any number of directories: none or more before another segment, one or more as the last.
    """

    def __init__(self, pattern: str) -> None:
        segments = [s for s in pattern.strip("/").split("/") if s not in ("", ".")] or ["*"]
        # ``**/**`` spans what one ``**`` does; kept apart, a chain of them (the model's to write) cost
        # every path tried a step each, each over all the path's segments: a minute for a listing.
        segments = [s for i, s in enumerate(segments) if not (s == "**" and i and segments[i - 1] == "**")]
        self._segments: list[Callable[[str], object] | None] = [
            None if s == "**" else _segment(s) for s in segments]
        self.depth = None if "**" in segments else len(segments)
        """The deepest level it can match; None: unbounded."""

    def __call__(self, path: str) -> bool:
        parts = path.split("/")
        reached = {0}  # how many of the path's segments the pattern's segments so far can take
        for i, segment in enumerate(self._segments):
            if segment is None:
                if i == len(self._segments) - 1:
                    return any(r < len(parts) for r in reached)
                reached = set(range(min(reached), len(parts) + 1)) if reached else set()
            else:
                reached = {r + 1 for r in reached if r < len(parts) and segment(parts[r])}
            if not reached:
                return False
        return len(parts) in reached


def _segment(segment: str) -> Callable[[str], object]:
    """A matcher of one path segment (``fullmatch``), its stars taken as described above."""
    chunks: list[str] = [""]  # the regexes between runs of stars
    for part in _TOKEN.split(segment):
        if part.startswith("*"):
            chunks.append("")
        elif part == "?":
            chunks[-1] += "."
        elif part.startswith("[") and part.endswith("]") and part not in ("[]", "[!]"):
            chunks[-1] += _char_class(part[1:-1])
        else:
            chunks[-1] += re.escape(part)
    if len(chunks) == 1:
        regex = chunks[0]
    else:
        head, *middle, tail = chunks
        # An atomic group commits to the first fit of each middle chunk: no way back into it.
        regex = head + "".join(f"(?>.*?{chunk})" for chunk in middle if chunk) + ".*" + tail
    return re.compile(regex, re.DOTALL).fullmatch


def _char_class(body: str) -> str:
    """The regex of the ``[...]`` whose inside is ``body``, as `fnmatch` reads it: a leading ``!``
    negates, ``a-z`` is a range and any other ``-`` itself; a range backwards (``z-a``) holds nothing,
    so that a class of only such matches no character (or, negated, any), where the regex it would
    make is an error. Every character is escaped, so regex syntax in a class (``^``, ``\\``, ``&&``,
    ``--``) stays literal."""
    negate, body = body.startswith("!"), body.removeprefix("!")
    members, i = [], 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            low, high = body[i], body[i + 2]
            if low <= high:
                members.append(re.escape(low) if low == high else f"{re.escape(low)}-{re.escape(high)}")
            i += 3
        else:
            members.append(re.escape(body[i]))
            i += 1
    if not members:
        return "." if negate else "(?!)"
    return "[" + ("^" if negate else "") + "".join(members) + "]"
