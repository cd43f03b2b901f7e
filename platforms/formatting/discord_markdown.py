"""Markdown to Discord's own Markdown (message ``content``).

Discord reads most of what the agent writes, so this mostly writes it back in
the form Discord understands: ``**bold**``, ``*italic*``, ``~~struck~~``,
inline code (between one backtick or two, whichever makes no run of backticks in the code end it,
since Discord's inline code has no fence longer than two and three backticks open a code block; only
code with runs of both one and two backticks gets a zero-width space in each run of two), fenced
code with its language, ``> `` quotes (one level), ``-``
and numbered lists, headings ``#`` to ``###`` (deeper ones as bold lines; bold within a heading
is left plain),
masked links ``[label](url)`` (a bare URL stays bare, as written, unless Discord would link
another address: one ending in a bracket, which Discord leaves out, or with text right after
it that Discord takes in, such as ``!``, ``…``, ``，`` or an invisible mark (a right-to-left mark, a
zero-width space: Markdown takes one at its end in too, but it follows the address); such an address
goes between ``<>``, which Discord links exactly; a label a
masked link cannot hold, with a bracket, an address or a character that needs a
backslash, is followed by its address instead: ``label (<url>)``; a line break in a label is
a space). Tables, which Discord
does not draw, become code blocks; rules a line of ``─``. Characters in the
text that Discord would read as formatting the agent did not mean (``*`` not
between spaces, ``_`` at a word's edge, ``~~``, ``||``, backticks, a backslash
before punctuation, ``](``, and ``#``, ``>``, ``-``, ``+``, ``1.`` at a line start)
are escaped with a backslash, except inside URLs; ``snake_case`` stays as it is.
A link reads as the address it goes to: an address shows its direction controls percent-encoded, a label none,
and a link an embedding, override or isolate opened before it still holds (not one closed, nor one on an earlier line)
is a left-to-right isolate (`bare_urls.isolated`), an address in it between ``<>``.
"""

from __future__ import annotations

import re

from platforms.formatting.bare_urls import (
    ISOLATE_END,
    ISOLATE_START,
    as_address,
    isolated,
    link_face,
    marks_at_end,
)
from platforms.formatting.link_labels import as_seen, other_address
from platforms.formatting.markdown import Context, Renderer

# What Discord would read as formatting in text CommonMark left literal: a backslash before
# punctuation, backticks, ``||`` spoilers, ``~~``, ``*`` not between spaces, ``_`` at a word's edge
# (never inside snake_case), and ``](`` that would make a masked link.
_SPECIAL = re.compile(r"\\(?=[!-/:-@\[-`{-~])|`|\|\||~~|\*(?!\s)|(?<!\s)\*|(?<![^\W_])_|_(?![^\W_])|\]\(")
_URL = re.compile(r"https?://\S+")
_BARE = re.compile(r"https?://[^\s<>]+", re.IGNORECASE)
# At a line's start: the marker of a heading, quote or list. Discord shows a backslash before a digit
# as typed, so an ordered list's number keeps its digits and its full stop is what is escaped.
# A link written out at a line's start begins with `ISOLATE_START`: its text is still the line's start.
_LINE_START = re.compile(f"^([ \\t]*{ISOLATE_START}?(?:\\d+(?=[.)](?:[ \\t]|$)))?)((?<=\\d)[.)]|[#>+-])",
                         re.MULTILINE)
_MARKERS = {"strong": "**", "em": "*", "strike": "~~"}
_BACKTICKS = re.compile(r"`+")
_TWO_BACKTICKS = re.compile(r"(?<!`)``(?!`)")
# Where Discord drops a space of inline code (simple-markdown's INLINE_CODE_ESCAPE_BACKTICKS_R,
# ``^ (?= *`)|(` *) $``): the first before spaces and a backtick, the last after a backtick and spaces.
_LEADING_BACKTICK = re.compile(r" *`")
_TRAILING_BACKTICK = re.compile(r"` *$")
# A backtick two more follow: a zero-width space after each leaves no three in a row, which would
# close the block (replacing ``` alone left one of ```` whole).
_FENCE_IN_CODE = re.compile(r"`(?=``)")
# What a masked link's label cannot hold: a bracket ends it early or is read as a link of its own,
# and Discord prints a link whose label holds a web address as typed. Nor can a label escape anything
# (Discord shows a backslash in one as typed, discord-api-docs#6185): such a label is written
# followed by its address, in <…> so that Discord links the address exactly, brackets and all.
_UNMASKABLE = re.compile(r"[\[\]]|https?://", re.IGNORECASE)
# Where an address Discord links by itself ends: its client's rule (simple-markdown's bare URL) takes
# every character up to a space or ``<``, then gives back a trailing ``.,:;"')]``. It does not pair
# brackets, so https://en.wikipedia.org/wiki/Python_(language) goes to ".../Python_(language", and it
# takes in what follows the address unspaced: the ``!`` of "see https://example.com!", a ``…``, a ``，``.
# Its space is JavaScript's ``\s``, which is Python's but for U+FEFF (and the separators U+001C-U+001F and
# U+0085, which are not JavaScript's): an address before a U+FEFF is linked without it, as written.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_DISCORD_LINKS = re.compile(f"https?://[^{_JS_SPACE}<]+[^<.,:;\"')\\]{_JS_SPACE}]", re.IGNORECASE)
# An address written as itself, marked until what follows it is known (`_addresses`): noncharacters,
# as the Slack renderer's edges are. Of what follows, only the first character Discord would not give
# back (past marks) decides: read to the next space, the rest of a line with no space (Chinese, Japanese)
# was read again for each address in it, a second for a line of 600.
_ADDRESS_START, _ADDRESS_END = "\ufdd2", "\ufdd3"
_ADDRESS = re.compile(f"(<?){_ADDRESS_START}(https?://[^\\s<>{_ADDRESS_END}]+){_ADDRESS_END}"
                      f"(?=[.,:;\"')\\]{_ADDRESS_START}{_ADDRESS_END}{ISOLATE_START}{ISOLATE_END}]*([^{_JS_SPACE}<]?))",
                      re.IGNORECASE)  # a link after it is between `ISOLATE_START` and `ISOLATE_END` till the end


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
        # Discord reads a style's text apart: an address at its end ends at the marker.
        return f"{marker}{_addresses(inner)}{marker}" if inner else ""

    def code_span(self, code: str, ctx: Context) -> str:
        # Discord's inline code is between one or two backticks (three open a code block) and ends at the
        # first run of as many in it: with a fence no run in the code matches, the code goes as it is.
        # Only code with runs of one and of two has none: a zero-width space (which a reader copying
        # the code copies too) then splits each run of two, and two backticks hold it.
        runs = {len(run) for run in _BACKTICKS.findall(code)}
        fence = "`" if 1 not in runs else "``"
        if 2 in runs and 1 in runs:
            code = _TWO_BACKTICKS.sub("`\u200b`", code)
        # A backtick next to the fence would lengthen it: a space keeps them apart, and Discord drops
        # one space between a fence and a backtick (only there: elsewhere it stays the code's own).
        lead = " " if _LEADING_BACKTICK.match(code) else ""
        trail = " " if _TRAILING_BACKTICK.search(code) else ""
        return f"{fence}{lead}{code}{trail}{fence}"

    def link(self, href: str, inner: str, label: str, ctx: Context, *, auto: bool) -> str:
        # Discord lays a link out with the text around it: none of its own direction controls, nor one before it
        # (`isolated`), is to turn it round into another address. An address it links by itself `_addresses`
        # marks for `isolated`.
        if auto:
            # As written: Discord links an address itself. Invisible marks at its end, which Markdown takes in,
            # Discord would take in too (its link going to …/a%E2%80%8F): they follow it, between <>.
            marks = marks_at_end(label)
            return _address(as_address(label[:len(label) - len(marks)])) + marks
        inner, label, href = link_face(inner, label), link_face(label, label), as_address(href)
        if label == href or not inner:
            return _address(href)
        if not href.lower().startswith(("http://", "https://")):
            return f"{ISOLATE_START}{inner} ({href}){ISOLATE_END}"  # Discord masks only web links
        # ``һttps\u200b://`` (a Cyrillic һ, a zero-width space) reads as one; ``bank.example`` is an address too.
        if _UNMASKABLE.search(as_seen(label)) or other_address(label, href) or _escape(label) != label:
            return f"{ISOLATE_START}{inner} (<{href}>){ISOLATE_END}"
        return f"{ISOLATE_START}[{inner}]({href.replace(')', '%29')}){ISOLATE_END}"

    def line_break(self, ctx: Context) -> str:
        # A quote's ``> `` or a list item's indentation would go into a masked link's label.
        return " " if ctx.link else "\n"

    def heading(self, level: int, inner: str, ctx: Context) -> str:
        inner = _addresses(inner)
        return f"{'#' * level} {inner}" if level <= 3 else f"**{inner}**"

    def code_block(self, code: str, lang: str, ctx: Context) -> str:
        # Discord has no longer fences: a ``` inside the code would end the block early.
        code = _FENCE_IN_CODE.sub("`\u200b", code)
        return f"```{lang}\n{code}\n```"

    def quote(self, inner: str, ctx: Context) -> str:
        if ctx.quote:
            return inner
        return "\n".join(f"> {line}" if line else ">" for line in inner.split("\n"))

    def paragraph(self, inline: str, ctx: Context) -> str:
        # Escape what would read as a heading, quote or list at the start of a line of text.
        return _LINE_START.sub(r"\1\\\2", _addresses(inline))


def _address(url: str) -> str:
    """A web address Discord is to link by itself, marked for `_addresses`; any other as it is."""
    return f"{_ADDRESS_START}{url}{_ADDRESS_END}" if url.lower().startswith(("http://", "https://")) else url


def _addresses(rendered: str) -> str:
    """``rendered`` with each address `_address` marked written as itself where Discord links that address
    as written, with what follows it, and between ``<>`` (which Discord links exactly) where it would link
    another; its marks gone (a noncharacter in the model's text with them: never worth sending)."""
    if _ADDRESS_START not in rendered:
        return rendered.replace(_ADDRESS_END, "")

    def one(m: re.Match[str]) -> str:
        before, url, after = m.group(1), m.group(2), m.group(3)
        if before:  # a < of the text before it: Discord reads <url> as one, and <<url> as a link to "<url"
            return f"{before}{ISOLATE_START}{url}{ISOLATE_END}"
        linked = _DISCORD_LINKS.match(url + after)
        return f"{ISOLATE_START}{url if linked is not None and linked.group() == url else f'<{url}>'}{ISOLATE_END}"

    return _ADDRESS.sub(one, rendered).replace(_ADDRESS_START, "").replace(_ADDRESS_END, "")


_RENDERER = DiscordMarkdown()


def render(markdown: str) -> str:
    """Discord Markdown for ``markdown``."""
    # The marks are the renderer's own: a noncharacter in the model's text is never worth sending.
    return isolated(_RENDERER.render(markdown.replace(ISOLATE_START, "").replace(ISOLATE_END, "")), _bracketed)


def _bracketed(link: str) -> str:
    """``link`` as it is to be between a U+2066 and a U+2069: a bare address between ``<>``, which Discord links
    exactly (bare, it would take the U+2069 in)."""
    return f"<{link}>" if _BARE.fullmatch(link) else link
