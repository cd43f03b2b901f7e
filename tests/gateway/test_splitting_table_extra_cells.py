"""split_text on a table row of more cells than its header, longer than a message part: its cells beyond the
header's show on every platform (platforms/formatting/tables.py `keep_extra_cells`), so the splitter reads them
too (gateway/markdown_structure.py). Its parser dropped them, and a long extra cell was cut anywhere: under a
two-column header, a 500-word third cell went to Discord as '... word26' then '2 word263 ...'."""

from __future__ import annotations

import pytest

from tests.gateway.test_splitting_long_table_rows import _ADAPTERS, _parts, _shown


@pytest.mark.parametrize("platform", sorted(_ADAPTERS))
def test_a_long_cell_beyond_the_header_is_cut_between_words(platform):
    words = [f"word{i}" for i in range(1500)]  # about 12,000 characters: three or more parts everywhere
    text = f"| Key | Notes |\n|---|---|\n| B | short | {' '.join(words)} |\n| C | fine |\n"
    parts = _parts(text, platform)
    assert len(parts) >= 3
    shown = [w for p in parts for line in _shown(p)[0].split("\n") for w in line.removeprefix("• ").split()]
    assert [w for w in shown if w.startswith("word")] == words  # each word whole, once, in order
    assert all(p.startswith("| Key | Notes |\n|---|---|\n| B |  | word") for p in parts[1:])  # the third column


def test_a_quoted_tables_extra_cell_is_cut_between_words_in_the_quote():
    words = [f"word{i}" for i in range(400)]
    parts = _parts(f"> | Key | Notes |\n> |---|---|\n> | B | short | {' '.join(words)} |\n", "discord")
    assert len(parts) >= 2
    assert all(p.startswith("> | Key | Notes |\n> |---|---|\n> | B | ") for p in parts[1:])
    shown = [w for p in parts for line in _shown(p)[0].split("\n") for w in line.removeprefix("• ").split()]
    assert [w for w in shown if w.startswith("word")] == words
