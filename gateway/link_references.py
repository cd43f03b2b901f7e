"""Reference-style links (``[the docs][d1]`` and, anywhere, ``[d1]: https://…``) in a reply cut into parts.

Each part is rendered on its own, so a link whose definition is in another part showed as
typed, brackets and all, and a part holding only definitions rendered as nothing (a message
Telegram and Discord refuse as empty). `definitions` writes every definition of a text once
more, for the splitter to add to each part; a definition renders as nothing, and a part may
hold one it never uses.
"""

from __future__ import annotations

from platforms.formatting.markdown import parse, parser


def definitions(text: str) -> str:
    """The link reference definitions of ``text``, one a line after a blank line, or ``""``: each
    with its label as markdown-it keys it (which matches the links written with it), its address
    between ``<>`` and its title."""
    if "]:" not in text:
        return ""
    env: dict[str, dict[str, dict[str, str]]] = {}
    parser().parse(text, env)
    lines = []
    for label, ref in env.get("references", {}).items():
        title = ref.get("title") or ""
        quoted = ' "' + title.replace("\\", "\\\\").replace('"', '\\"') + '"' if title else ""
        lines.append(f"[{label}]: <{ref['href']}>{quoted}")
    return "\n\n" + "\n".join(lines) if lines else ""


def shows_nothing(part: str) -> bool:
    """``part`` holds only definitions (and whitespace): rendered, it is empty."""
    return not parse(part)
