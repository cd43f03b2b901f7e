"""Styles beside Chinese, Japanese and Korean on the web chat's page (platforms/web_static/markdown.js, in a real
headless chromium): ``**注意：**这里`` is bold, as the gateway reads it for the other platforms by the CJK-friendly
amendment to CommonMark (platforms/formatting/flanking.py); the page showed its asterisks."""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from platforms.formatting.flanking import _CJK
from tests.scenarios.test_web_chat_markdown import STYLED, gateway_styled, render_growth, shown_as_sent
from tests.web_client import web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def styled_on_page(page, texts: list[str]) -> list[Any]:
    """`STYLED` of each of ``texts`` rendered on ``page`` by the page's own renderer, in one call."""
    return await page.evaluate("""(texts) => {
      const into = document.createElement("div");
      const styled = """ + STYLED + """;
      return texts.map((text) => { SwitchboardMarkdown.render(text, into); return styled(into); });
    }""", texts)


async def test_a_style_between_cjk_punctuation_and_cjk_text_is_shown_styled_as_the_gateway_reads_it(
        chat, page) -> None:
    # The page showed each of these with its marks, but the last three, which read as CommonMark does.
    cases = ["**注意：**这里有个问题", "これは**「重要」**です", "日本語の**テスト（試験）**です",
             "用**`pip install`**来安装", "패키지를 발행하려면 **`npm publish`**를 실행하십시오",
             "価格は*「未定」*です", "删除~~（旧）~~了",
             "名前は**𠮷野（よしの）**さん", "〇\ufe00**「x」**です", "**Note:**next", "中文_强调_中文", "**😀:**x"]
    text = "\n\n".join(cases)
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(STYLED) == [
        ["strong", "注意："], ["strong", "「重要」"], ["strong", "テスト（試験）"], ["strong", "pip install"],
        ["code", "pip install"], ["strong", "npm publish"], ["code", "npm publish"], ["em", "「未定」"],
        ["s", "（旧）"], ["strong", "𠮷野（よしの）"], ["strong", "「x」"]] == gateway_styled(text)
    assert "*" not in (await mine.text_content()).split("**Note:**")[0]


async def test_styles_beside_cjk_and_other_text_are_read_as_the_gateway_reads_them(chat, page) -> None:
    # Every pairing of what stands outside a style, inside it and which marks, each side: CJK letters and
    # punctuation (astral ones and a variation selector's too), Latin, spaces, ASCII punctuation, an emoji.
    await shown_as_sent(chat, page, "x")
    outside = ["", "中", "한", "。", "ｶ", "𠮷", "〇\ufe00", "\U000e0100", "a", " ", "(", "😀", "\u3000"]
    inside = ["「重要」", "注意：", "中文", "a", "(x)", "`c`", "𠮷", "：x", "x。"]
    texts = [before + marks + text + marks + after for before, text, after, marks
             in itertools.product(outside, inside, outside, ["**", "*", "~~", "_", "__"])]
    shown = await styled_on_page(page, texts)
    wrong = [(text, mine, gateway_styled(text)) for text, mine in zip(texts, shown) if mine != gateway_styled(text)]
    assert not wrong, (len(wrong), wrong[:20])


def _cjk_runs() -> list[range]:
    """Each run of code points flanking.py counts as CJK characters."""
    runs: list[range] = []
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF or not _CJK.match(chr(code)):
            continue
        if runs and runs[-1].stop == code:
            runs[-1] = range(runs[-1].start, code + 1)
        else:
            runs.append(range(code, code + 1))
    return runs


async def test_the_page_counts_the_same_characters_as_cjk_as_the_gateway(chat, page) -> None:
    # Each character before a run whose other side would decide otherwise: `y{c}**(x)**` is bold only if a letter
    # `c` counts as CJK, `**(x{c}**a` only if punctuation `c` does. The edges of every run of CJK characters, each
    # side, and a spread of others, in every plane holding some.
    await shown_as_sent(chat, page, "x")
    runs = _cjk_runs()
    codes = {code for run in runs for code in (run.start - 1, run.start, run.stop - 1, run.stop)}
    codes |= {*range(0x80, 0x40000, 61), *range(0xE0000, 0xE0200, 7)}
    # What Python's Unicode does not know yet (U+FDCB, a symbol to the browser) is no punctuation to markdown-it.
    codes = sorted(c for c in codes if not 0xD800 <= c <= 0xDFFF
                   and (unicodedata.category(chr(c)) != "Cn" or any(c in run for run in runs)))
    texts = [text for c in codes for text in (f"y{chr(c)}**(x)**", f"**(x{chr(c)}**a")]
    shown = await styled_on_page(page, texts)
    wrong = [(text, mine, gateway_styled(text)) for text, mine in zip(texts, shown) if mine != gateway_styled(text)]
    assert not wrong, (len(wrong), wrong[:20])


async def test_a_message_of_long_emphasis_like_runs_beside_cjk_renders_in_time_growing_as_its_length(
        chat, page) -> None:
    # Runs beside CJK open and close where CommonMark's would not: each opener must still find its closer, or that
    # it has none, without reading on to the end of the line again. Some of these close styles, most open only.
    runs = ["中**「x", "中**「x」", "。*中", "한 **「", "中~~（x", "𠮷__「x", "〇\ufe00**「", "中*「x **「y"]
    await shown_as_sent(chat, page, "x")

    def text(run: str, chars: int) -> str:
        return (run * -(-chars // len(run)))[:chars]

    per_render = await render_growth(page, [(run, text(run, 7_800), text(run, 31_200)) for run in runs])
    # Four times the text, four times the time (a little more for the browser): sixteen were it its square.
    assert all(long < 10 * short for _, short, long in per_render), per_render
