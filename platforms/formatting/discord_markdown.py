"""Markdown to Discord's own Markdown (message ``content``).

Discord reads most of what the agent writes, so this mostly writes it back in
the form Discord understands: ``**bold**``, ``*italic*``, ``~~struck~~``,
inline code (backticks in it kept apart by a zero-width space, since Discord's inline code has no
fence longer than two and three backticks open a code block), fenced code with its language, ``> `` quotes (one level), ``-``
and numbered lists, headings ``#`` to ``###`` (deeper ones as bold lines; bold within a heading
is left plain),
masked links ``[label](url)`` (a bare URL stays bare, as written; a label a
masked link cannot hold, with a bracket, an address or a character that needs a
backslash, is followed by its address instead: ``label (<url>)``). Tables, which Discord
does not draw, become code blocks; rules a line of ``─``. Characters in the
text that Discord would read as formatting the agent did not mean (``*`` not
between spaces, ``_`` at a word's edge, ``~~``, ``||``, backticks, a backslash
before punctuation, ``](``, and ``#``, ``>``, ``-``, ``+``, ``1.`` at a line start)
are escaped with a backslash, except inside URLs; ``snake_case`` stays as it is.
"""

from __future__ import annotations

import re

from platforms.formatting.markdown import Context, Renderer

# What Discord would read as formatting in text CommonMark left literal: a backslash before
# punctuation, backticks, ``||`` spoilers, ``~~``, ``*`` not between spaces, ``_`` at a word's edge
# (never inside snake_case), and ``](`` that would make a masked link.
_SPECIAL = re.compile(r"\\(?=[!-/:-@\[-`{-~])|`|\|\||~~|\*(?!\s)|(?<!\s)\*|(?<![^\W_])_|_(?![^\W_])|\]\(")
_URL = re.compile(r"https?://\S+")
_LINE_START = re.compile(r"^([ \t]*)(#|>|-|\+|\d+(?=[.)]))", re.MULTILINE)
_MARKERS = {"strong": "**", "em": "*", "strike": "~~"}
_BACKTICK_RUN = re.compile(r"`(?=`)")
_BROKEN_FENCE = "`\u200b``"  # a zero-width space keeps three backticks from closing a block
# What a masked link's label cannot hold: a bracket ends it early or is read as a link of its own,
# and Discord prints a link whose label holds a web address as typed. Nor can a label escape anything
# (Discord shows a backslash in one as typed, discord-api-docs#6185): such a label is written
# followed by its address, in <…> so that Discord links the address exactly, brackets and all.
_UNMASKABLE = re.compile(r"[\[\]]|https?://", re.IGNORECASE)


def _backslashed(m: re.Match[str]) -> str:
    return "".join("\\" + c for c in m.group())


def _escape(text: str) -> str:
    out, last = [], 0
    for url in _URL.finditer(text):
        out.append(_SPECIAL.sub(_backslashed, text[last:url.start()]))
        out.append(url.group())
        last = url.end()
    out.append(_SPECIAL.sub(_backslashed, text[last:]))
    return "".join(out)


class DiscordMarkdown(Renderer):
    bullet = "-"

    def text(self, text: str, ctx: Context) -> str:
        return _escape(text)

    def style(self, kind: str, inner: str, ctx: Context) -> str:
        if kind == "strong" and ctx.heading:
            return inner  # bold already; a deep heading is **…**, which a ** within would end
        marker = _MARKERS[kind]
        return f"{marker}{inner}{marker}" if inner else ""

    def code_span(self, code: str, ctx: Context) -> str:
        # Discord's inline code is between one or two backticks; three open a code block. A zero-width
        # space after each backtick followed by another leaves no run in the code, so two always do.
        code = _BACKTICK_RUN.sub("`\u200b", code)
        fence = "``" if "`" in code else "`"
        pad = " " if code.startswith("`") or code.endswith("`") else ""
        return f"{fence}{pad}{code}{pad}{fence}"

    def link(self, href: str, inner: str, label: str, ctx: Context, *, auto: bool) -> str:
        if auto:
            return label  # as written: Discord links an address itself
        if label == href or not inner:
            return href
        if not href.lower().startswith(("http://", "https://")):
            return f"{inner} ({href})"  # Discord masks only web links
        if _UNMASKABLE.search(label) or _escape(label) != label:
            return f"{inner} (<{href}>)"
        return f"[{inner}]({href.replace(')', '%29')})"

    def heading(self, level: int, inner: str, ctx: Context) -> str:
        return f"{'#' * level} {inner}" if level <= 3 else f"**{inner}**"

    def code_block(self, code: str, lang: str, ctx: Context) -> str:
        # Discord has no longer fences: a ``` inside the code would end the block early.
        code = code.replace("```", _BROKEN_FENCE)
        return f"```{lang}\n{code}\n```"

    def quote(self, inner: str, ctx: Context) -> str:
        if ctx.quote:
            return inner
        return "\n".join(f"> {line}" if line else ">" for line in inner.split("\n"))

    def paragraph(self, inline: str, ctx: Context) -> str:
        # Escape what would read as a heading, quote or list at the start of a line of text.
        return _LINE_START.sub(r"\1\\\2", inline)


_RENDERER = DiscordMarkdown()


def render(markdown: str) -> str:
    """Discord Markdown for ``markdown``."""
    return _RENDERER.render(markdown)
