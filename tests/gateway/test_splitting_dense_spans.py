"""split_text on text dense with formatted spans, with Telegram's measure: a part holds 100 spans (Telegram reads no
more), far fewer characters than the limit, and finding each part's end must not render the limit's worth each time."""

from __future__ import annotations

from gateway.splitting import split_text
from platforms.telegram import TelegramAdapter

_ADAPTER = TelegramAdapter("123:token")


def test_a_part_of_a_hundred_spans_is_found_without_rendering_the_limit_for_each():
    # 2,000 "*a*" runs make 20 parts of 100; the search guessed 4,096 characters first for every part,
    # then halved down to 400: it rendered 37 times the text (3 s for a message's worth on a busy machine).
    text = " ".join(["*a*"] * 2000)
    measured: list[int] = []

    def measure(part: str) -> int:
        measured.append(len(part))
        return _ADAPTER.measure(part)

    parts = split_text(text, _ADAPTER.text_limit, measure)
    assert len(parts) == 20 and all(_ADAPTER.spans(p) <= _ADAPTER.max_spans for p in parts)
    assert sum(measured) <= 25 * len(text)
