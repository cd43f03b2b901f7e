"""A key ring's change is committed whole (`Journal.save_keys`): no commit leaves the retired key verifying next to
its successor, nor a handle signed with a key that is not committed yet, for a crash to keep."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent import AgentSession, HookRegistry
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import AsyncSubagentLifecycle, ChildHost, MemoryJournal, SubagentLaunchRequest
from lifecycle._sqlite_journal import SqliteJournal
from tests.lifecycle.conftest import FakeClock, child_script, make_registry
from tests.lifecycle.journal_records import inspect


class Watched(SqliteJournal):
    """Reads, after each commit, what a crash right then would leave: the keys, and the kids that signed handles."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.states: list[tuple[list[tuple], set[str]]] = []

    def committed(self, error: BaseException | None) -> None:
        super().committed(error)
        keys = inspect(self._path, "SELECT kid, retired_at IS NOT NULL FROM lifecycle_keys ORDER BY kid")
        handles = inspect(self._path, "SELECT handle FROM lifecycle_records")
        self.states.append((keys, {json.loads(h)["capability"].split(".")[1] for (h,) in handles}))


def _service(tmp_path: Path, journal) -> tuple[AsyncSubagentLifecycle, AgentSession]:
    registry, clock = make_registry(), FakeClock()  # a clock that stands still: new keys tie on created_at
    host = ChildHost(tools=registry, hooks=HookRegistry(), clock=clock)
    parent = AgentSession(model=ScriptedModel({"leaf": child_script}), tools=registry.resolve(None),
                          session_id="parent-1", clock=clock, workspace=tmp_path)
    return AsyncSubagentLifecycle(host, journal), parent


async def test_retiring_the_signing_key_commits_its_retirement_and_its_successor_together(tmp_path: Path) -> None:
    # One commit a key: a crash between them left the retired key verifying again after the restart (or, the
    # other way round, no key but a fresh one that had never signed anything).
    journal = Watched(tmp_path / "j.db")
    service, _ = _service(tmp_path, journal)
    await service.start()
    try:
        old = service.keyring.active_kid
        journal.states.clear()
        await service.retire_key(old)
        new = service.keyring.active_kid
        before, after = [(old, 0)], sorted([(old, 1), (new, 0)])
        assert [keys for keys, _ in journal.states if keys != before] == [after]
    finally:
        await service.close()


async def test_a_handle_signed_with_a_new_key_is_never_committed_before_that_key(tmp_path: Path) -> None:
    # The new key signed at once, but was committed after every older one, one commit each: a launch made
    # meanwhile committed a handle whose key a crash then would lose, unknown after the restart.
    journal = Watched(tmp_path / "j.db")
    service, parent = _service(tmp_path, journal)
    await service.start()
    try:
        await service.rotate_key()  # two keys: re-saving them took two commits before the new one's
        journal.states.clear()

        async def launch() -> None:
            with inside_turn(parent, "turn-1"):
                await service.launch(SubagentLaunchRequest(goal="Review this change."))

        await asyncio.gather(service.rotate_key(), launch())  # the launch signs with the key being saved
        for keys, signers in journal.states:
            assert signers <= {kid for kid, _ in keys}
        assert len(journal.states[-1][1]) == 1  # the launch was committed
    finally:
        await service.close()


async def test_the_memory_journal_saves_a_ring_whole_or_not_at_all() -> None:
    journal = MemoryJournal()
    await journal.save_keys([("k1", b"s" * 32, 1.0, None), ("k2", b"t" * 32, 2.0, 3.0)])
    assert await journal.load_keys() == [("k1", b"s" * 32, 1.0, None), ("k2", b"t" * 32, 2.0, 3.0)]
    with pytest.raises(ValueError):
        await journal.save_keys([("k3", b"u" * 32, 4.0, None), ("k1", b"s" * 32, "not a time", None)])
    assert [row[0] for row in await journal.load_keys()] == ["k1", "k2"]  # nothing of the failed save kept
