"""Glob patterns over ``/``-separated relative paths, for `list_files`.

`pathlib.Path.glob` follows symlinked directories during ``**`` (before 3.13),
which could walk out of the workspace; matching walked paths against a regex keeps
the walk under our control.
"""

from __future__ import annotations

import re


def glob_regex(pattern: str) -> tuple[re.Pattern[str], int | None]:
    """A regex for a glob over ``/``-separated relative paths, and the deepest level it can match.

    ``*``, ``?`` and ``[...]`` stay within one path segment; a ``**`` segment spans
    any number of directories (depth ``None``: unbounded).
    """
    segments = [s for s in pattern.strip("/").split("/") if s not in ("", ".")] or ["*"]
    out = []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        parts = re.split(r"(\*+|\?|\[!?\]?[^\]]*\])", seg)
        for part in parts:
            if part.startswith("*"):
                out.append("[^/]*")
            elif part == "?":
                out.append("[^/]")
            elif part.startswith("[") and part.endswith("]") and part not in ("[]", "[!]"):
                negate, body = part[1] == "!", part[1:-1].removeprefix("!")
                # Escape all but '-' so regex syntax inside a class ('^', '\\', '&&') stays literal.
                body = "".join(c if c == "-" else re.escape(c) for c in body)
                out.append("[" + ("^" if negate else "") + body + "]")
            else:
                out.append(re.escape(part))
        out.append("" if last else "/")
    depth = None if "**" in segments else len(segments)
    return re.compile("".join(out) + r"\Z"), depth
