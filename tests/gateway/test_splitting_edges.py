"""split_text at the edges of a part, found by looping over limits: a list item a part given up on as plain text
starts (written as measured, with the number it is shown with), the ``)`` glued after an address a part holds
exactly, and a strikethrough nested right inside another one under a bold (or italic) one (``**~~`` + ``~~``)."""

from __future__ import annotations

import re

import pytest

from gateway.splitting import split_text
from platforms.formatting import markdown
from tests.gateway.test_splitting_shown_markers import _PLATFORMS, _shown

PLATFORMS = ["web", "telegram", "discord", "slack"]


def _letters(shown: str) -> str:
    return "".join(c for c in shown if c.isalnum())


@pytest.mark.parametrize("number", ["2", "10", "123456789"])
@pytest.mark.parametrize("address", ["<https://x.org/" + "a" * 45 + ">", "https://x.org/" + "a" * 45])
def test_a_list_item_given_up_on_as_plain_text_is_written_as_it_was_measured(number, address):
    # Measured out of its list (``2.    <https…``, shorter) but sent as typed (``123456789. <https…``): 37 of 32.
    text = f"1. y\n\n{number}. {address}"
    for limit in range(8, len(text)):
        parts = split_text(text, limit)
        assert [p for p in parts if len(p) > limit] == [], (limit, parts)
        assert _letters("".join(parts)).endswith(_letters(address)), (limit, parts)


def test_the_item_a_part_gives_up_on_keeps_the_number_it_is_shown_with():
    parts = split_text("1. y\n\n123456789. <https://x.org/" + "a" * 45 + ">", 32)
    assert parts[1].startswith("2. ") and all(len(p) <= 32 for p in parts), parts


_URL = "https://example.org/" + "a" * 30


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("text", "held"), [
    (f"some words ({_URL}) and more", f"{_URL})"), (f"xxxxx({_URL}) and more", f"{_URL})"),
    (f"a ({_URL}).", f"{_URL})."), (f"(see {_URL}) more", f"{_URL})"), (f"> words ({_URL}) more", f"> {_URL})")])
def test_the_parenthesis_after_an_address_goes_with_it_when_a_part_holds_both(platform, text, held):
    # A part held "(" and the address exactly: the ")" began the next part (``(https://…`` + ``) and more``). Not
    # where the part holds nothing but the "(" before the address: moved, it would be a message reading "(" alone.
    measure = _PLATFORMS[platform][0]
    for limit in range(measure(held), len(text) + 2):
        parts = split_text(text, limit, measure)
        assert [p for i, p in enumerate(parts) if p.lstrip("> ").startswith(")")
                and re.search(r"\w", parts[i - 1].lstrip("> ").split(_URL)[0])] == [], (limit, parts)
        assert any(_URL in p for p in parts), (limit, parts)  # never cut where a part holds it


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("text", ["**a ~~b ~~cccccccccccccccccccc~~ d~~ e**", "*~~bbbb ~~baa abaabba~~ aaba~~ c*",
                                  "**~~a ~~bb bbbbbbbbbbb bbbbbbb~~ c~~ d**", "*~~a ~~bbbbbbbbbbbbbbbbbbbbb~~ c~~*",
                                  "~~a ~~bbbbbbbbbbbbbbbbbbbbb~~ c~~", "**a ~~bbbbbbbbbbbbbbbbbbbbb~~ c**",
                                  "~~a **b** c~~", "**a ~~b~~**", "- __x ~~y ~~zzzzzzzzzzzzzzzz~~~~__ w"])
def test_a_strikethrough_nested_in_one_is_never_reopened_or_closed_next_to_it(platform, text):
    # "**~~" + "~~bb…": "**~~~~bb", shown as typed; and "…~~" + "~~" closing both, "~~~~" read as one run.
    measure, sent = _PLATFORMS[platform]
    for limit in range(8, 61):
        parts = split_text(text, limit, measure)
        assert [p for p in parts if "~~~~" in p and "~~~~" not in text] == [], (limit, parts)
        assert [p for p in parts if sent(p) > limit] == [], (limit, parts)
        assert [p for p in parts if any(t.type in ("fence", "code_block") for t in markdown.block_tokens(p))] == []
        assert _letters("".join(_shown(p)[1] for p in parts)) == _letters(_shown(text)[1]), (limit, parts)


def test_the_parenthesis_before_an_address_is_not_left_a_part_of_its_own():
    # Moving the address to the next part, for its ")", left "(" a message alone: no better than one reading ")".
    parts = split_text(f"some words ({_URL}) and more", 51)
    assert "(" not in parts and all(len(p) <= 51 for p in parts), parts
