"""A note of invisible characters only (zero-width spaces, a BOM, joiners, bidi marks...) was stored: listed
as ``[4] `` with nothing after it, found by no search, and taking one of the places memory has. Now it is
refused, saying why, and nothing is added."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent._errors import ToolError
from agent.tools.memory import memory_toolset

(MEMORY,) = memory_toolset()

SHOWS_NOTHING = ("the note shows nothing: it holds only whitespace and invisible characters (zero-width spaces, "
                 "byte order marks, other format characters); nothing was added")


@pytest.fixture
def services(tmp_path: Path) -> dict[str, Path]:
    return {"memory_path": tmp_path / "memory.json"}


@pytest.mark.parametrize("text", [
    "\u200b", "\ufeff", "\u200b \u200c\u200d\u2060", "\u00ad", "\u202e\u202c", "\U000e0041\U000e007f",
    "\ufe0f", "\u3164", "\u2800", "\u200b\n\t\u200b",
])
async def test_a_note_that_shows_nothing_is_refused(call, services, text):
    with pytest.raises(ToolError) as refused:
        await call(MEMORY, {"action": "add", "text": text}, services)
    assert str(refused.value) == SHOWS_NOTHING
    assert not services["memory_path"].exists()


async def test_a_note_with_invisible_characters_among_visible_ones_is_kept(call, services):
    for text in ("\ufeffAlice likes tea", "\u2764\ufe0f", "a\u200bb"):
        await call(MEMORY, {"action": "add", "text": text}, services)
    notes = json.loads(services["memory_path"].read_text())["notes"]
    assert [n["text"] for n in notes] == ["\ufeffAlice likes tea", "\u2764\ufe0f", "a\u200bb"]


async def test_whitespace_alone_is_still_an_empty_text(call, services):
    with pytest.raises(ToolError, match="action 'add' needs a non-empty 'text'"):
        await call(MEMORY, {"action": "add", "text": " \u3000\n "}, services)
