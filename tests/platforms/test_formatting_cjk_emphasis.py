"""Styles beside Chinese, Japanese and Korean text: ``**注意：**这里`` and ``これは**「重要」**です`` are bold on every
platform, as the CJK-friendly amendment to CommonMark reads them (`platforms.formatting.flanking`), not asterisks shown
as typed; text without CJK characters next to its markers reads as CommonMark does; and the splitter cuts inside such
a style as inside any other, closing and reopening it."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from gateway.splitting import split_text
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import discord_markdown, markdown, slack_mrkdwn, telegram_html


def _telegram(text: str) -> tuple[str, list[tuple[str, str]]]:
    """What Telegram shows of ``text``, and each styled stretch with its style."""
    shown, entities = parse_html(telegram_html.render(text))
    return shown, [(e["type"], shown[e["offset"]:e["offset"] + e["length"]]) for e in entities]


@pytest.mark.parametrize(("written", "shown", "styled"), [
    ("**注意：**这里有个问题", "注意：这里有个问题", ("bold", "注意：")),
    ("これは**「重要」**です", "これは「重要」です", ("bold", "「重要」")),
    ("日本語の**テスト（試験）**です", "日本語のテスト（試験）です", ("bold", "テスト（試験）")),
    ("用**`pip install`**来安装", "用pip install来安装", ("bold", "pip install")),
    ("패키지를 발행하려면 **`npm publish`**를 실행하십시오", "패키지를 발행하려면 npm publish를 실행하십시오",
     ("bold", "npm publish")),
    ("価格は*「未定」*です", "価格は「未定」です", ("italic", "「未定」")),
    ("删除~~（旧）~~了", "删除（旧）了", ("strikethrough", "（旧）")),
])
def test_a_style_between_cjk_punctuation_and_cjk_text_is_shown_styled(written, shown, styled):
    assert _telegram(written)[0] == shown and _telegram(written)[1][0] == styled
    marker = {"bold": "**", "italic": "*", "strikethrough": "~~"}[styled[0]]
    assert f"{marker}{written.split(marker)[1]}{marker}" in discord_markdown.render(written)
    assert "\\*" not in discord_markdown.render(written) and "**" not in slack_mrkdwn.render(written)


@pytest.mark.parametrize("written", [
    "**Note:**next", "a**\"b\"**c", "snake_case_names", "中文_强调_中文", "2 * 3 * 4", "**😀:**x", "x **「y」 z",
])
def test_text_without_cjk_beside_its_markers_reads_as_commonmark(written):
    commonmark = MarkdownIt("commonmark").enable("strikethrough").renderInline(written)
    assert markdown.parser().renderInline(written) == commonmark


_CJK_PUNCTUATION = "。，、：；！？「」『』（）【】《》"
_CJK = _CJK_PUNCTUATION + "中文한ｶ\U000e0100"
_piece = st.one_of(st.sampled_from([*_CJK, "😀", "a", "1", " ", ".", ":", "(", ")", '"', "\u3000", "\ufe00"]),
                   st.sampled_from(["*", "**", "_", "__", "~~", "***"]))
EXAMPLES = int(os.environ.get("CJK_EMPHASIS_EXAMPLES", "300"))
"""Checked with 5,000."""


def _beside_cjk(text: str) -> bool:
    """Whether a run of markers in ``text`` has a CJK character (one a variation selector follows) next to it."""
    unselected = text.replace("\ufe00", "")
    return any(c in "*_~" and any(n in _CJK for n in unselected[max(i - 1, 0):i + 2]) for i, c in enumerate(unselected))


@settings(max_examples=EXAMPLES, deadline=None)
@given(text=st.lists(_piece, max_size=16).map("".join))
def test_markers_with_no_cjk_character_beside_them_read_as_commonmark(text):
    rendered = markdown.parser().renderInline(text)
    if not _beside_cjk(text):
        assert rendered == MarkdownIt("commonmark").enable("strikethrough").renderInline(text)


_inner = st.lists(st.sampled_from([*_CJK_PUNCTUATION, "中", "文", "한", "a", "1"]), min_size=1, max_size=8).map("".join)


@settings(max_examples=EXAMPLES, deadline=None)
@given(before=st.sampled_from(["", "中", "は", "한", "。"]), inner=_inner,
       after=st.sampled_from(["", "文", "を", "는", "。"]), marker=st.sampled_from(["**", "*", "~~"]))
def test_a_style_whose_text_is_cjk_is_shown_styled_whatever_cjk_stands_beside_it(before, inner, after, marker):
    kind = {"**": "bold", "*": "italic", "~~": "strikethrough"}[marker]
    assert _telegram(f"{before}{marker}{inner}{marker}{after}") == (before + inner + after, [(kind, inner)])


def test_a_part_cut_inside_such_a_style_closes_it_and_the_next_reopens_it():
    text = "これは**「" + "重要な点" * 20 + "」**です"
    parts = split_text(text, 60, lambda part: len(telegram_html.visible_text(telegram_html.render(part))))
    assert len(parts) > 1
    for part in parts:
        shown, styled = _telegram(part)
        assert "*" not in shown and styled and styled[0][0] == "bold", part
