"""Splitting a reply written as one long paragraph (no blank line in it, every line formatted): each candidate
part ends in that paragraph, which was parsed and rendered whole for each; its lines are now parsed a piece at a
time, each remembered (`platforms.formatting.inline_lines`)."""

from __future__ import annotations

from markdown_it.parser_inline import ParserInline

from gateway.splitting import split_text
from platforms.telegram import TelegramAdapter


def test_a_reply_that_is_one_long_paragraph_is_parsed_a_few_times_over_not_once_per_candidate(monkeypatch):
    # A paragraph is one block: each of the fifteen or so candidates of a part was parsed and rendered whole,
    # 20 times the reply's length parsed, 5 s for 200 KB on Telegram. Counted (what markdown-it's inline parser
    # reads), not timed: a loaded machine.
    parsed: list[int] = []
    parse = ParserInline.parse
    monkeypatch.setattr(ParserInline, "parse", lambda self, src, md, env, out: parsed.append(len(src)) or
                        parse(self, src, md, env, out))
    text = "\n".join(f"Line {i}: the **first** thing is the *timeout* of `client.connect({i})`, see "
                     f"[docs](https://example.com/d/{i}) and ~~old~~ _new_ values." for i in range(250))
    parts = split_text(text, 4096, TelegramAdapter("123:token").measure)
    assert len(parts) > 5
    assert sum(parsed) < 8 * len(text), sum(parsed) / len(text)
