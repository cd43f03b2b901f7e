"""`gateway.link_references.LateReferences`, which finds a label's definition only in the runs of blocks with a line
that may define it, against `References`, which parses them all: the same definitions for the same text, so a start
of a text too long for its chat (`gateway.long_messages.split_bounded`) carries what the whole text's parts do."""

from __future__ import annotations

import random

import pytest

from gateway.link_references import LateReferences, References
from gateway.long_messages import split_bounded
from gateway.splitting import split_text

LABELS = ["a", "A", "b", "foo bar", "Foo  Bar", "foo\nbar", "x\\]y", "ß", "SS"]
PREFIXES = ["", "> ", "- ", "1. ", "   ", " > ", "> > ", "* ", "2) ", "\t", "    ", "- > "]
REFERS = "Refs: " + " ".join(f"[{label}]" for label in LABELS) + " [foo\\\nbar] [foo\ufffdbar]"


def _definition(rng: random.Random, label: str) -> str:
    prefix = rng.choice(PREFIXES)
    # A label over two lines, the second with its quote's or item's marks again, or none (a lazy line).
    label = label.replace("\n", "\n" + rng.choice(["", "> ", "  ", "> > "]))
    return f"{prefix}[{label}]: https://example.com/{rng.randrange(1000)}" + rng.choice(["", ' "t"', " 'q'"])


def _block(rng: random.Random) -> str:
    label = rng.choice(LABELS)
    return rng.choice([
        _definition(rng, label),
        f"```\n{_definition(rng, label)}\ncode\n```",  # in code: defines nothing
        f"text [{label}] and [x][{label}]",
        f"- item\n- {_definition(rng, label)}",
        f"> quote\n{_definition(rng, label)}",
        f"a paragraph\n{_definition(rng, label)}",  # its continuation: defines nothing
        f"    {_definition(rng, label)}",  # indented code
        "~~~\n" + "row[1]: v\n" * 3 + "~~~",
        "word " * rng.randrange(1, 10),
    ])


def _text(seed: int) -> str:
    rng = random.Random(seed)
    text = rng.choice(["\n\n", "\n"]).join(_block(rng) for _ in range(rng.randrange(2, 12)))
    return text.replace("\n", rng.choice(["\n", "\n", "\r\n"]))


@pytest.mark.parametrize("text", [
    "intro\n\n> [foo\n> bar]: https://example.com/quote\n",  # markdown-it reads the label without the second ">"
    "intro\n\n> - [foo\n>   bar]: https://example.com/item-in-quote\n",
    "intro\r\r[foo bar]: https://example.com/lone-cr\r",
    "intro\n\n[foo\\\nbar]: https://example.com/backslash-break\n",
    "intro\n\n[foo\0bar]: https://example.com/nul\n",  # read as U+FFFD
])
def test_a_definition_markdown_it_reads_otherwise_than_typed_is_found(text):
    assert LateReferences(text, 10**6).for_part(REFERS) == References(text, 10**6).for_part(REFERS) != ""


def test_the_definitions_found_are_those_of_the_whole_text():
    for seed in range(400):
        text = _text(seed)
        assert LateReferences(text, 10**6, longest=60).for_part(REFERS) == \
            References(text, 10**6, longest=60).for_part(REFERS), (seed, text)


def test_a_start_carries_a_definition_over_two_lines_of_a_quote_as_the_whole_texts_parts_do():
    body = "\n\n".join(f"See [item {n}][foo bar] and [d]. " + "word " * 30 for n in range(30))
    text = f"{body}\n\n> [foo\n> bar]: https://example.com/quoted\n\n[d]: https://example.com/docs\n"
    parts = split_bounded(text, 300, len, 3)
    assert parts[:3] == split_text(text, 300)[:3]
    assert "[FOO BAR]: <https://example.com/quoted>" in parts[0]


def test_a_start_carries_a_definition_over_two_lines_of_a_quote_when_it_is_the_only_one():
    body = "\n\n".join(f"See [item {n}][foo bar]. " + "word " * 30 for n in range(30))
    text = f"{body}\n\n> [foo\n> bar]: https://example.com/quoted\n"
    parts = split_bounded(text, 300, len, 3)
    assert parts[:3] == split_text(text, 300)[:3]
    assert parts[0].endswith("[FOO BAR]: <https://example.com/quoted>")
