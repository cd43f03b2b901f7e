"""A link definition too long for any part (`gateway.long_messages.split_bounded`): a model's dump can be one line
of megabytes that looks like ``[a]: https://…``. The start of the text split stays a start: only a definition a
part could carry moves its end back to the definition's line, and only such a one is written after it. The start
ended before the whole line instead, and grew until it was the whole text, split whole (a megabyte took some 20 s,
hundreds of parts, where the bound exists to split about ``most``); a long definition the start uses was written
after it whole, and split too."""

from __future__ import annotations

from gateway.long_messages import split_bounded
from gateway.splitting import split_text

LIMIT, MOST = 4096, 16
HUGE = 200_000


def test_a_huge_one_line_definition_leaves_the_split_bounded():
    for text in ("intro\n[zz]: https://" + "x" * HUGE, "See [a].\n[a]: https://" + "x" * HUGE):
        parts = split_bounded(text, LIMIT, len, MOST)
        assert MOST < len(parts) <= MOST + 4 and parts[0] == text.partition("\n")[0]


def test_a_huge_definition_the_start_uses_is_not_written_after_it():
    text = "See [a] " + "word " * 40_000 + "\n\n[a]: https://" + "x" * HUGE
    parts = split_bounded(text, LIMIT, len, MOST)
    assert MOST < len(parts) <= MOST + 4
    assert parts[:MOST] == split_text(text[: (MOST + 2) * LIMIT], LIMIT, len)[:MOST]  # as the whole text's


def test_a_crlf_texts_definition_is_still_carried_and_not_cut_through():
    body = "\r\n\r\n".join(f"See [item {n}][r0] then " + "word " * 50 for n in range(7))
    text = body + "\r\n\r\n[r0]: https://example.com/the/docs\r\n\r\nmore " + "tail " * 300
    for pad in range(40, 90, 7):
        padded = "x" * pad + text
        parts = split_bounded(padded, 400, len, 3)
        assert parts[:3] == split_text(padded, 400)[:3], pad
        assert parts[0].endswith("[R0]: <https://example.com/the/docs>"), pad
