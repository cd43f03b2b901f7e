"""Long replies heavy with formatting split into exactly the parts they did before splitting was made faster
(`platforms.formatting.inline_lines`: a paragraph's lines parsed a piece at a time): the parts of each, per
platform, pinned as a hash of the parts `split_text` gave then."""

from __future__ import annotations

import hashlib
import random

import pytest

from gateway.splitting import safe_measure, split_text
from platforms.discord import DiscordAdapter
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter

_ADAPTERS = {"telegram": TelegramAdapter("123:token"), "discord": DiscordAdapter("token"),
             "slack": SlackAdapter(bot_token="xoxb-1", app_token="xapp-1")}
# What a line of a reply holds, constructs left open across lines among them (an italic, a link's label, a code span,
# a title), and what a line may end in (a hard break's spaces or backslash).
_BITS = ["**bold {i}**", "*it {i}*", "`code_{i}`", "[link {i}](https://e.com/{i})", "~~old {i}~~", "word{i}",
         "snake_case_{i}", "_u {i}_", "**a *b {i}* c**", "https://x.org/{i}_a", "\\*esc", "&amp;", "2 * {i}", "[{i}]",
         "[ref]", "*open {i}", "close {i}*", "[label {i}", "{i}](https://e.com/x)", "`span {i}", "{i}`", "&#95;x_",
         "![img {i}](i.png)", "a_b_{i}", "<https://y.org/{i}>", "[t](u \"title {i}", "{i}\")", "~~", "__{i}__"]
_ENDS = ["", "", "", "", "  ", "\\", " "]
_STARTS = ["", "", "", "", "", "", "- ", "1. ", "> ", "## ", "   ", "\t"]


def _line(rnd: random.Random, i: int, starts: list[str], bits: list[str] = _BITS) -> str:
    words = " ".join(rnd.choice(bits).format(i=i) for _ in range(rnd.randint(3, 12)))
    return rnd.choice(starts) + words + rnd.choice(_ENDS)


def one_paragraph(size: int, seed: int) -> str:
    """A reply written as one long paragraph: no blank line, every line formatted."""
    rnd, lines, i = random.Random(seed), [], 0
    while sum(map(len, lines)) < size:
        i += 1
        lines.append(_line(rnd, i, [""]))
    return "\n".join(lines) + "\n\n[ref]: https://e.com/ref\n"


def closed_lines(size: int, seed: int) -> str:
    """One long paragraph again, but what each line opens it closes: a piece may end after any line."""
    rnd, lines, i = random.Random(seed), [], 0
    while sum(map(len, lines)) < size:
        i += 1
        lines.append(_line(rnd, i, [""], _BITS[:10]).rstrip(" \\"))
    return "\n".join(lines) + "\n"


def mixed(size: int, seed: int) -> str:
    """Paragraphs, lists (lazy lines too), quotes, headings, a table and a code block now and then."""
    rnd, out, i = random.Random(seed), [], 0
    while sum(map(len, out)) < size:
        i += 1
        r = rnd.random()
        if r < 0.03:
            out.append(f"\n| a | **b** |\n|---|---|\n| `{i}` | [x](https://e.com/{i}) |\n\n")
        elif r < 0.06:
            out.append(f"```py\nprint({i})  # **not bold**\n```\n")
        else:
            out.append(_line(rnd, i, _STARTS) + ("\n\n" if rnd.random() < 0.12 else "\n"))
    return "".join(out)


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


PINNED = {
    ('one_paragraph', 40000, 1, 'discord'): (18, '34117f42d5724f34'),
    ('one_paragraph', 40000, 1, 'slack'): (11, '366274d72ea6b98e'),
    ('one_paragraph', 40000, 1, 'telegram'): (11, '2524e308b66962e3'),
    ('closed_lines', 60000, 5, 'discord'): (32, '08db2cc2c04e7af2'),
    ('closed_lines', 60000, 5, 'slack'): (16, '264b8caedee361cf'),
    ('closed_lines', 60000, 5, 'telegram'): (36, '0179850a05dd1595'),
    ('mixed', 40000, 3, 'discord'): (23, '8d036b7087b14cea'),
    ('mixed', 40000, 3, 'slack'): (12, 'eab641e1606f7f42'),
    ('mixed', 40000, 3, 'telegram'): (13, '75941509a3ae02ce'),
}
"""(reply, size, seed, platform): how many parts, and their hash, as split before."""


@pytest.mark.parametrize(("reply", "size", "seed"), sorted({(k[0], k[1], k[2]) for k in PINNED}))
@pytest.mark.parametrize("platform", sorted(_ADAPTERS))
def test_a_long_formatted_reply_splits_into_the_parts_it_did_before(reply, size, seed, platform):
    adapter = _ADAPTERS[platform]
    text = {"one_paragraph": one_paragraph, "closed_lines": closed_lines, "mixed": mixed}[reply](size, seed)
    parts = split_text(text, adapter.text_limit, safe_measure(adapter))
    assert (len(parts), _digest(parts)) == PINNED[reply, size, seed, platform]
