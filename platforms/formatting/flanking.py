"""Whether a run of ``*``, ``_`` or ``~`` may open or close a style next to Chinese, Japanese or Korean text.

CommonMark lets a run with punctuation on its inner side open (close) a style only with a space or punctuation
on its outer side. Chinese and Japanese put no space around their words, and the model bolds a label ending in
full-width punctuation or a phrase in corner brackets: ``**注意：**这里``, ``これは**「重要」**です``. Read
so, every platform showed the asterisks as typed (Discord, whose own Markdown bolds them, saw them escaped).

Here a run is read as the CJK-friendly amendment to CommonMark reads it (commonmark/commonmark-spec#650, as the
markdown-it-cjk-friendly plugin does): a CJK character (one East Asian wide, full-width or half-width, but an emoji,
or a Hangul one) beside a run counts as punctuation would on that side, and CJK punctuation inside it does not make
it ask for a space outside. A variation selector after a CJK character (``〇︀``) is read as that character.
Text without CJK characters next to its runs reads as in CommonMark.

Both parsers use these rules, the renderers' (`markdown.parser`) and the splitter's (`gateway.markdown_structure`),
so a part is cut where a platform shows the style.
"""

from __future__ import annotations

from functools import partial

import regex
from markdown_it import MarkdownIt
from markdown_it.common.utils import isMdAsciiPunct, isPunctChar, isWhiteSpace
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline.state_inline import Scanned

_CJK = regex.compile(r"(?V1)[[\p{ea=W}\p{ea=F}\p{ea=H}]--[\p{Emoji_Presentation}\p{Cn}]]"
                     r"|\p{sc=Hangul}|[\U000E0100-\U000E01EF]")
"""A CJK character, or an ideographic variation selector, which follows one."""
_FIRST_CJK = "\u1100"
"""None comes before the first Hangul jamo: a run beside Latin, Greek, Arabic... is not looked up."""


def scan_delims(state: StateInline, start: int, can_split_word: bool) -> Scanned:
    """`StateInline.scanDelims` for the run at ``start``, CJK-friendly (see the module docstring)."""
    src, end = state.src, state.posMax
    pos = start
    while pos < end and src[pos] == src[start]:
        pos += 1
    before = src[start - 1] if start > 0 else " "
    # A variation selector but the emoji one (U+FE0F) after a CJK character takes that character's part.
    if "\ufe00" <= before <= "\ufe0e" and start > 1 and _CJK.match(src[start - 2]):
        before = src[start - 2]
    after = src[pos] if pos < end else " "
    last_space, next_space = isWhiteSpace(ord(before)), isWhiteSpace(ord(after))
    last_punct = isMdAsciiPunct(ord(before)) or isPunctChar(before)
    next_punct = isMdAsciiPunct(ord(after)) or isPunctChar(after)
    last_cjk = before >= _FIRST_CJK and _CJK.match(before) is not None
    next_cjk = after >= _FIRST_CJK and _CJK.match(after) is not None
    left = not next_space and (not next_punct or next_cjk or last_space or last_punct or last_cjk)
    right = not last_space and (not last_punct or last_cjk or next_space or next_punct or next_cjk)
    can_open = left and (can_split_word or not right or last_punct)
    can_close = right and (can_split_word or not left or next_punct)
    return Scanned(can_open, can_close, pos - start)


def enable(md: MarkdownIt) -> MarkdownIt:
    """``md`` with its emphasis and strikethrough read by `scan_delims`."""
    tokenize = md.inline.tokenize

    def cjk_friendly(state: StateInline) -> None:
        # The rules ask the state, which markdown-it makes for each inline text with no hook to make another kind:
        # set here, once a text, not in a wrapper of each rule, which markdown-it calls at almost every character.
        state.scanDelims = partial(scan_delims, state)  # type: ignore[method-assign]
        tokenize(state)

    md.inline.tokenize = cjk_friendly  # type: ignore[method-assign]
    return md
