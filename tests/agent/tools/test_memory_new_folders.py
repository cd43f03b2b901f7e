"""The folders the memory tool makes for a notes file (the first note of a chat, of a platform) last
as the note does: each one's name is flushed in the folder above it before the note is reported added."""

from __future__ import annotations

from agent.tools.memory import memory_toolset

(MEMORY,) = memory_toolset()


async def test_the_folders_made_for_a_first_note_are_on_disk_for_good(call, tmp_path, fsyncs):
    state = tmp_path / "state"
    state.mkdir()
    path = state / "memory" / "telegram" / "42.json"
    assert await call(MEMORY, {"action": "add", "text": "remember me"}, {"memory_path": path}) == "added note 1"
    memory = path.parent.parent
    assert fsyncs.of(state, memory) == [(state, {"memory"}), (memory, {"telegram"})]
    assert fsyncs.of(path)  # and the note itself, as ever


async def test_folders_already_there_are_not_flushed_again(call, tmp_path, fsyncs):
    path = tmp_path / "memory" / "telegram" / "42.json"
    services = {"memory_path": path}
    await call(MEMORY, {"action": "add", "text": "one"}, services)
    flushed = fsyncs.of(tmp_path, path.parent.parent)
    await call(MEMORY, {"action": "add", "text": "two"}, services)
    assert fsyncs.of(tmp_path, path.parent.parent) == flushed

