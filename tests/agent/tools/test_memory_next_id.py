"""A notes file whose ``next_id`` was edited by hand: one that is not a whole number made every add fail with
``memory failed: ValueError: invalid literal for int()`` (or a TypeError), naming neither the file nor the key;
one lowered gave a new note the id of a kept one, so that a 'remove' of that id took both. Now the next note
takes an id past every id held, a warning names the file, and the mended ``next_id`` is saved."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from agent.tools.memory import memory_toolset

(MEMORY,) = memory_toolset()


def notes_file(tmp_path: Path, next_id: object) -> Path:
    path = tmp_path / "memory.json"
    path.write_text(json.dumps({"version": 1, "next_id": next_id, "notes": [
        {"id": 1, "text": "Alice likes tea"}, {"id": 7, "text": "Bob likes coffee"}]}))
    return path


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "agent.tools.memory" and r.levelno == logging.WARNING]


@pytest.mark.parametrize("next_id", ["eight", None, [8], {"n": 8}, True, 2.5], ids=repr)
async def test_a_next_id_that_is_no_whole_number_is_named_and_the_add_takes_the_id_past_the_highest(
        call, tmp_path, caplog, next_id) -> None:
    path = notes_file(tmp_path, next_id)
    with caplog.at_level(logging.WARNING, logger="agent.tools.memory"):
        assert await call(MEMORY, {"action": "add", "text": "Carol likes juice"}, {"memory_path": path}) == \
            "added note 8"
        assert await call(MEMORY, {"action": "add", "text": "Dan likes milk"}, {"memory_path": path}) == \
            "added note 9"
    [line] = warnings(caplog)  # the file is mended by the first add: said once
    assert str(path) in line and "'next_id' that is not a whole number" in line and "takes 8" in line
    assert json.loads(path.read_text())["next_id"] == 10


@pytest.mark.parametrize("next_id", [1, 7, 0, -3])
async def test_a_lowered_next_id_never_gives_a_new_note_a_kept_notes_id(call, tmp_path, caplog, next_id) -> None:
    path = notes_file(tmp_path, next_id)
    services = {"memory_path": path}
    with caplog.at_level(logging.WARNING, logger="agent.tools.memory"):
        assert await call(MEMORY, {"action": "add", "text": "Carol likes juice"}, services) == "added note 8"
    [line] = warnings(caplog)
    assert str(path) in line and f"'next_id' {next_id}, not past the highest id" in line
    assert await call(MEMORY, {"action": "remove", "id": 7}, services) == "removed note 7"
    assert await call(MEMORY, {"action": "list"}, services) == "[1] Alice likes tea\n[8] Carol likes juice"


@pytest.mark.parametrize("next_id", [12, "12", 12.0])
async def test_a_next_id_past_every_note_is_taken_as_it_is_and_says_nothing(call, tmp_path, caplog, next_id) -> None:
    path = notes_file(tmp_path, next_id)
    with caplog.at_level(logging.WARNING, logger="agent.tools.memory"):
        assert await call(MEMORY, {"action": "add", "text": "Carol likes juice"}, {"memory_path": path}) == \
            "added note 12"
    assert warnings(caplog) == []
