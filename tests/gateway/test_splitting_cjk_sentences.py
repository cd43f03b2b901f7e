"""Long Chinese or Japanese prose with no line breaks, split: each part ends after a sentence's or clause's end
(``。！？；`` and the closing quotes or brackets right after it) or at an ideographic space when one falls in the
last quarter of what the part could hold, as Latin text is cut at a space; such prose has no spaces, and was cut
wherever the limit fell, mid-word. Parts stay about as many."""

from __future__ import annotations

import math
import os
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.splitting import safe_measure, split_text
from platforms.formatting import telegram_html
from platforms.telegram import TelegramAdapter

_CUT = re.compile(r"[。！？；][」』）】〕〗〙〛〉》”’]*|　+")
"""Where a part of such prose may end, as `split_text` documents it."""

CHINESE = "".join(f"第{i}步：打开配置文件，把超时时间改成十秒，然后重新启动服务！要是还不行呢？就查看日志；"
                  f"日志里会写明原因。" for i in range(1, 80))
JAPANESE = "".join(f"彼は「設定{i}を確認してください。」と言った。　次に、サービスを再起動します。"
                   for i in range(1, 80))


def test_chinese_prose_is_cut_after_its_sentences_ends_and_nothing_is_lost():
    parts = split_text(CHINESE, 400)
    assert "".join(parts) == CHINESE
    assert all(part[-1] in "。！？；" for part in parts[:-1]), [part[-5:] for part in parts]
    assert len(parts) <= math.ceil(len(CHINESE) / 400) + 1


def test_japanese_prose_keeps_a_closing_quote_with_its_sentence_and_is_cut_at_an_ideographic_space():
    parts = split_text(JAPANESE, 90)
    assert all(re.search(r"[。！？；][」』）]*\Z", part) for part in parts[:-1]), [part[-5:] for part in parts]
    assert not any(part.startswith(("」", "　")) for part in parts)
    # The ideographic spaces at cuts are dropped, as other whitespace; the rest is all there.
    assert "".join(parts).replace("　", "") == JAPANESE.replace("　", "")


def test_words_set_apart_by_ideographic_spaces_are_kept_whole():
    words = [f"東京都{i}丁目" for i in range(1, 120)]
    parts = split_text("　".join(words), 50)
    assert [word for part in parts for word in part.split("　")] == words


def test_a_sentences_end_comes_before_a_space_between_latin_words_in_it():
    text = "我们用 Python 和 Go 编写这个服务，部署在 Kubernetes 上。" * 12
    parts = split_text(text, 80)
    assert all(part.endswith("上。") for part in parts[:-1]), [part[-8:] for part in parts]


def test_a_sentences_end_in_the_first_half_of_a_part_leaves_it_full():
    # Only the last quarter of what a part can hold is looked at, and no further: a reply of sentences a little
    # longer than half a part would take twice the parts.
    text = "短句。" + "很长的句子没有任何标点符号" * 30
    parts = split_text(text, 100)
    assert len(parts[0]) == 100 and len(parts) == math.ceil(len(text) / 100)


def test_styles_open_at_a_sentences_end_are_closed_and_reopened_with_the_platforms_measure():
    text = "这是**重要的说明。" + "请仔细阅读每一条规则并遵守它们。" * 40 + "**最后一句。"
    measure = safe_measure(TelegramAdapter("123456:test-token"))
    parts = split_text(text, 200, measure)
    for part in parts[:-1]:
        assert measure(part) <= 200 and part.endswith("。**"), part[-8:]
        assert telegram_html.render(part).count("<b>") == 1
    assert len(parts) <= math.ceil(len(text) / 190) + 1


_run = st.text(alphabet="设置服务日志原因确認再起動", min_size=1, max_size=12)
_piece = st.one_of(_run, _run, st.sampled_from(["。", "！", "？", "；", "，", "」", "。」", "！）", "　", " ", " Go "]))
_prose = st.lists(_piece, min_size=1, max_size=60).map("".join)
EXAMPLES = int(os.environ.get("CJK_SPLIT_EXAMPLES", "300"))
"""Checked with 5,000."""


@settings(max_examples=EXAMPLES, deadline=None)
@given(text=_prose, limit=st.integers(min_value=6, max_value=80))
def test_a_part_ends_at_the_last_sentences_end_in_the_last_quarter_of_what_it_could_hold(text, limit):
    parts = split_text(text, limit)
    assert all(0 < len(part) <= limit for part in parts)
    assert "".join(parts).replace(" ", "").replace("　", "") == text.replace(" ", "").replace("　", "")
    at = 0
    for part in parts[:-1]:
        start = text.index(part, at)
        end = min(start + limit, len(text))
        late = end - (end - start) // 4
        cuts = [m.end() for m in _CUT.finditer(text, late, min(end + 8, len(text))) if m.end() <= end]
        if cuts:
            assert start + len(part) == len(text[:cuts[-1]].rstrip()), (part, text[start:end])
        at = start + len(part)
