"""Rendering a run of blocks at a time (platforms.formatting.blocks) gives what rendering the whole
text at once gave, on every platform, and so splitting gives the same parts."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gateway.splitting import split_text
from platforms.base import utf16_length
from platforms.formatting import blocks, discord_markdown, markdown, slack_mrkdwn, telegram_html
from platforms.formatting.bare_urls import isolated
from platforms.formatting.markdown import Context, Renderer, parse

RENDERERS = [telegram_html._RENDERER, slack_mrkdwn._RENDERER, discord_markdown._RENDERER]


def whole(renderer: Renderer, markdown: str, tokens: list | None = None) -> str:
    """How every text was rendered before: parsed whole, in one go (``tokens``: ``markdown``'s, parsed
    already; a renderer's walk only reads them)."""
    tokens = parse(markdown) if tokens is None else tokens
    return renderer._blocks(tokens, 0, len(tokens), Context()).strip("\n")


_word = st.sampled_from(["word", "**bold**", "*it*", "_it_", "~~s~~", "`code`", "[l](https://x.org/a)",
                         "https://x.org/b_c", "**open", "*", "`", "&amp;", "<b>", "\\*", "中文", "😀", "1.", "-",
                         "[ref]", "[ref]: /u", "|", ">", "#"])
_inline = st.lists(_word, min_size=1, max_size=6).map(" ".join)
_indent = st.sampled_from(["", "", "", " ", "  ", "   ", "    ", "\t"])
_line = st.one_of(
    _inline,
    st.tuples(st.sampled_from(["- ", "* ", "+ ", "1. ", "2) ", "10. ", "> ", "# ", "## "]), _inline).map("".join),
    st.sampled_from(["```", "```py", "~~~", "````", "``` x`y", "---", "***", "- - -", "===", "| a | b |",
                     "|---|---|", "| 1 | 2 |", "", " ", "-", "1.", ">"]),
)
_doc = st.lists(st.tuples(_indent, _line, st.sampled_from(["\n", "\n", "\n\n", "\n \n", "\n\n\n"])),
                max_size=25).map(lambda ls: "".join(i + t + e for i, t, e in ls))


@settings(max_examples=800, deadline=None)
@given(text=_doc)
@example(text="- word\n- word\n``` x`y\n\n- word\n")  # backticks with one in their info string: no fence
@example(text="[ref]: /u\n\n| [ref] | b |\n|---|---|\n")  # a table cell's link read by a definition
def test_rendering_runs_gives_the_whole_rendering(text):
    assert "".join(blocks.chunks(text)) == text
    tokens = parse(text)  # once for the three renderers
    for renderer in RENDERERS:  # the walk a run at a time, before the fallback for text that shows nothing
        assert renderer._render(text) == whole(renderer, text, tokens)


def test_a_reply_is_cut_into_runs_between_blocks_not_inside_lists_fences_or_quotes():
    text = "# T\n\npara\n\n- a\n\n- b\nlazy\n\n```\nx\n\ny\n```\n\n> q\n\nend\n"
    assert blocks.chunks(text) == ["# T\n\n", "para\n\n", "- a\n\n- b\nlazy\n\n", "```\nx\n\ny\n```\n\n", "> q\n\n",
                                   "end\n"]
    # An indented fence may be a list item's or the top level's: nothing after it is cut.
    assert blocks.chunks("a\n\nb\n\n  ```\nx\n\n```\n\nc") == ["a\n\n", "b\n\n  ```\nx\n\n```\n\nc"]


def telegram_measure(text: str, render=telegram_html.render) -> int:
    rendered = render(text)
    length = max(utf16_length(telegram_html.visible_text(rendered)), utf16_length(text))
    return max(length, 4097) if telegram_html.entity_count(rendered) > telegram_html.MAX_ENTITIES else length


@pytest.mark.parametrize("platform", ["telegram", "slack", "discord"])
@settings(max_examples=150, deadline=None)
@given(text=st.lists(_doc, min_size=1, max_size=4).map("\n\n".join), limit=st.integers(min_value=40, max_value=400))
@example(text="word word word *it*\n- [l](https://x.org/a)\n", limit=40)  # a link written out: its address bare
@example(text="---\nword word https://x.org/b_c\n", limit=40)  # a link's isolate marks, which rendering takes out
def test_splitting_gives_the_parts_rendering_whole_texts_gave(platform, text, limit):
    renderer = {"telegram": telegram_html._RENDERER, "slack": slack_mrkdwn._RENDERER,
                "discord": discord_markdown._RENDERER}[platform]

    def old(t: str) -> int:
        if platform == "telegram":  # its addresses are settled after the walk, whole or a run at a time, and its
            # links' isolate marks taken out (`bare_urls.isolated`), as `telegram_html.render` does
            return telegram_measure(t, lambda m: telegram_html._addresses(isolated(whole(renderer, m))))
        return len(whole(renderer, t))

    def new(t: str) -> int:
        return telegram_measure(t) if platform == "telegram" else len(renderer.render(t))

    try:
        expected = split_text(text, limit, old)
    except ValueError:
        with pytest.raises(ValueError):
            split_text(text, limit, new)
        return
    assert split_text(text, limit, new) == expected


def test_the_parser_is_ready_before_two_threads_use_it():
    # markdown-it compiles each rule chain on first use, filling a dict another thread may already
    # read: a split in a worker thread and a render on the event loop, both the process's first,
    # got no block rules ("none of the block rules matched") or no inline ones (the text dropped).
    markdown.parser.cache_clear()
    md = markdown.parser()
    rulers = {"core": md.core.ruler, "block": md.block.ruler, "inline": md.inline.ruler, "inline2": md.inline.ruler2}
    assert [name for name, ruler in rulers.items() if ruler.__cache__ is None] == []
