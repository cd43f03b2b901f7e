"""A notes file edited by hand past the memory tool's bounds. A note longer than a note may have: shown
whole, one past what an answer may show was shown as none (``(2 more not shown …)``), hiding its id, which
'remove' needs, and every note after it; now it is shown cut where a note must end, saying so. More notes
than a file may hold: the refusal of an add says how many to remove, not "remove a note" again and again."""

from __future__ import annotations

import json

import pytest

from agent._errors import ToolError
from agent.tools import memory as memory_module
from agent.tools.memory import MAX_NOTE_CHARS, MAX_SHOWN_CHARS, memory_toolset

(MEMORY,) = memory_toolset()


async def test_a_note_too_long_is_shown_cut_with_its_id_and_hides_no_note_after_it(call, tmp_path):
    path = tmp_path / "memory.json"
    long = "tea " * (MAX_SHOWN_CHARS // 2)
    path.write_text(json.dumps({"version": 1, "next_id": 3, "notes": [
        {"id": 1, "text": long}, {"id": 2, "text": "Carol likes coffee"},
    ]}))
    services = {"memory_path": path}
    cut = (f"[1] {long[:MAX_NOTE_CHARS]}… (cut short: this note has {len(long)} characters, more than the "
           f"{MAX_NOTE_CHARS} a note may have; the file was edited by hand?)")
    assert await call(MEMORY, {"action": "list"}, services) == cut + "\n[2] Carol likes coffee"
    assert await call(MEMORY, {"action": "search", "query": "tea"}, services) == cut
    assert await call(MEMORY, {"action": "remove", "id": 1}, services) == "removed note 1"
    assert await call(MEMORY, {"action": "list"}, services) == "[2] Carol likes coffee"


async def test_a_file_past_the_notes_it_may_hold_says_how_many_to_remove(call, tmp_path, monkeypatch):
    # "remove a note" alone, the model removed one and was refused again, told of a full memory of 2 notes.
    monkeypatch.setattr(memory_module, "MAX_NOTES", 2)
    path = tmp_path / "memory.json"
    notes = [{"id": i, "text": f"note {i}"} for i in range(1, 5)]
    path.write_text(json.dumps({"version": 1, "next_id": 5, "notes": notes}))
    services = {"memory_path": path}
    with pytest.raises(ToolError, match=r"^memory is full \(4 notes, more than the 2 it may hold: the file was edited "
                                        r"by hand\?\); remove 3 notes before adding another$"):
        await call(MEMORY, {"action": "add", "text": "one more"}, services)
    for note_id in (1, 2, 3):
        await call(MEMORY, {"action": "remove", "id": note_id}, services)
    assert await call(MEMORY, {"action": "add", "text": "one more"}, services) == "added note 5"
    with pytest.raises(ToolError, match=r"^memory is full \(2 notes\); remove a note before adding another$"):
        await call(MEMORY, {"action": "add", "text": "and another"}, services)
