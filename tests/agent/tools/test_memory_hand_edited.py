"""A notes file edited by hand with a note lacking its ``id`` or ``text`` (or not an object at all): `list`
and `search` failed with a KeyError (the model read ``memory failed: KeyError: 'text'``) for every later
call, and `add`/`remove` with an AttributeError for a note that is not an object. Now such a note is skipped,
said so in the answer and in a warning naming the file, and kept in the file as it was."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from agent.tools.memory import memory_toolset

(MEMORY,) = memory_toolset()
SKIPPED = ("\n(2 note(s) in the memory file cannot be shown: each lacks a whole-number 'id' or a 'text'; "
           "the operator can fix the file by hand)")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    path = tmp_path / "memory.json"
    path.write_text(json.dumps({"version": 1, "next_id": 4, "notes": [
        {"id": 1, "text": "Alice likes tea"},
        {"id": 2, "txt": "a typo in the key: Bob likes tea"},
        "a note as a bare string",
        {"id": 3, "text": "Carol likes coffee"},
    ]}))
    return path


async def test_list_and_search_show_the_readable_notes_and_count_the_others(call, path, caplog):
    services = {"memory_path": path}
    with caplog.at_level(logging.WARNING, logger="agent.tools.memory"):
        listed = await call(MEMORY, {"action": "list"}, services)
        assert listed == "[1] Alice likes tea\n[3] Carol likes coffee" + SKIPPED
        assert await call(MEMORY, {"action": "search", "query": "tea"}, services) == "[1] Alice likes tea" + SKIPPED
        assert await call(MEMORY, {"action": "search", "query": "nothing"}, services) == "(no matching notes)" + SKIPPED
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings
    assert all(str(path) in w and "2 note(s) without a whole-number 'id' or a 'text'" in w for w in warnings)


async def test_changes_keep_the_unreadable_notes_as_they_are(call, path):
    services = {"memory_path": path, "note_key": lambda: "turn-1/1"}  # a turn run again looks its note up
    assert await call(MEMORY, {"action": "add", "text": "Dan likes juice"}, services) == "added note 4"
    assert await call(MEMORY, {"action": "remove", "id": 1}, services) == "removed note 1"
    notes = json.loads(path.read_text())["notes"]
    assert notes[:2] == [{"id": 2, "txt": "a typo in the key: Bob likes tea"}, "a note as a bare string"]
    assert [n["text"] for n in notes[2:]] == ["Carol likes coffee", "Dan likes juice"]
    assert await call(MEMORY, {"action": "add", "text": "Dan likes tea"}, services) == "added note 4"


async def test_a_file_of_good_notes_says_nothing_more(call, tmp_path):
    services = {"memory_path": tmp_path / "memory.json"}
    await call(MEMORY, {"action": "add", "text": "Alice likes tea"}, services)
    assert await call(MEMORY, {"action": "list"}, services) == "[1] Alice likes tea"
