"""A link definition at the end of a message too long for its chat, after a code block of megabytes
(`gateway.long_messages.split_bounded`, `gateway.link_references.LateReferences`): only the runs of blocks that may
define a label the first parts use are parsed for it. Every run holding ``]:`` was parsed: a dump whose lines read
``row[1]: …`` made the code block one, parsed whole (some 2 s per 10 MB) on top of the split of its start."""

from __future__ import annotations

import pytest

from gateway.long_messages import split_bounded
from gateway.splitting import split_text
from platforms.formatting import markdown

DUMP = "\n".join(f"row[{n}]: value {n}" for n in range(60_000))
"""About 1.2 MB of code, ``]:`` on every line."""


@pytest.fixture
def parsed(monkeypatch) -> list[int]:
    """The length of each text parsed for its link definitions (`markdown.definitions`, one run at a time)."""
    lengths: list[int] = []
    parse = markdown._run_definitions.__wrapped__  # not its cache: a run parsed before would go unseen

    def recorded(run: str) -> markdown.Definitions:
        lengths.append(len(run))
        return parse(run)

    monkeypatch.setattr(markdown, "_run_definitions", recorded)
    return lengths


def test_a_definition_after_a_huge_code_block_is_carried_without_parsing_the_block(parsed):
    text = f"See [the docs][d].\n\n```\n{DUMP}\n```\n\n[d]: https://example.com/docs\n"
    parts = split_bounded(text, 100, len, 3)
    assert 3 < len(parts) < 40
    assert parts[0].startswith("See [the docs][d].") and parts[0].endswith("```\n\n[D]: <https://example.com/docs>")
    assert max(parsed) < 10_000


def test_a_line_in_the_code_block_that_looks_like_the_definition_is_not_taken_for_it(parsed):
    # A run that may define the label is parsed, code block or not: there it defines nothing, and the later one wins.
    code = f"[d]: https://example.com/wrong\n{DUMP[:20_000]}"
    text = f"See [the docs][d].\n\n```\n{code}\n```\n\n[d]: https://example.com/docs\n"
    parts = split_bounded(text, 100, len, 3)
    assert parts[0].endswith("```\n\n[D]: <https://example.com/docs>")
    assert parts[:3] == split_text(text, 100)[:3]


def test_the_first_of_two_definitions_wins_as_in_the_whole_text():
    body = "\n\n".join(f"See [item {n}][r0] then " + "word " * 30 for n in range(30))
    text = f"{body}\n\n[r0]: https://example.com/first\n\n```\n{DUMP[:5_000]}\n```\n\n[r0]: https://example.com/2nd\n"
    parts = split_bounded(text, 300, len, 3)
    assert parts[:3] == split_text(text, 300)[:3]
    assert parts[0].endswith("[R0]: <https://example.com/first>")
