"""A key ring change whose commit fails leaves the ring as it was, in memory too (`_commit_ring`): nothing signs
with a key the journal does not hold, so no handle reads unknown after a restart, and a key whose retirement was
not kept does not read retired until the restart revives it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent.testing import inside_turn
from lifecycle import JournalError, SubagentLaunchRequest, SubagentState
from lifecycle._sqlite_journal import SqliteJournal
from tests.lifecycle.test_key_rotation_commit import _service

S = SubagentState
FULL = "The journal could not save the keys (database or disk is full)."


class KeysRefused(SqliteJournal):
    """Saves records, but no key ring once ``refusing``: a commit goes by first, as it does for a real save, so a
    launch queued meanwhile is written while the keys are not."""

    refusing = False

    async def save_keys(self, rows) -> None:
        if not self.refusing:
            return await super().save_keys(rows)
        await asyncio.sleep(0)  # the caller's change is made: a launch run now signs with its ring
        await self.sync()
        raise JournalError(FULL, code="JOURNAL_WRITE_FAILED")


async def _launch(service, parent):
    with inside_turn(parent, "turn-1"):
        return await service.launch(SubagentLaunchRequest(goal="Review this change."))


async def _state(service, parent, handle) -> SubagentState:
    with inside_turn(parent, "turn-2"):  # a plugin's handle is read in a turn of its parent session
        return (await service.status(handle)).state


async def _state_after_a_restart(tmp_path: Path, handle) -> SubagentState:
    service, parent = _service(tmp_path, SqliteJournal(tmp_path / "j.db"))
    await service.start()
    try:
        return await _state(service, parent, handle)
    finally:
        await service.close()


async def test_a_rotation_whose_commit_fails_keeps_signing_with_the_committed_key(tmp_path: Path) -> None:
    # The new key stayed the signing one: every handle signed after the failure read unknown after a restart.
    journal = KeysRefused(tmp_path / "j.db")
    service, parent = _service(tmp_path, journal)
    await service.start()
    try:
        old = service.keyring.active_kid
        journal.refusing = True
        with pytest.raises(JournalError, match="disk is full"):
            await service.rotate_key()
        journal.refusing = False
        assert service.keyring.active_kid == old
        handle = await _launch(service, parent)
        assert handle.capability.split(".")[1] == old
    finally:
        await service.close()
    assert await _state_after_a_restart(tmp_path, handle) is not S.UNKNOWN


async def test_a_launch_during_a_rotation_whose_commit_fails_gets_a_handle_that_survives_a_restart(
        tmp_path: Path) -> None:
    # Signed with the new key, its PENDING row committed while the key was not: unknown after the restart (and, were
    # the ring rolled back when the failure is heard, unknown at once).
    journal = KeysRefused(tmp_path / "j.db")
    service, parent = _service(tmp_path, journal)
    await service.start()
    try:
        journal.refusing = True
        rotated, handle = await asyncio.gather(service.rotate_key(), _launch(service, parent), return_exceptions=True)
        journal.refusing = False
        assert isinstance(rotated, JournalError)
        assert await _state(service, parent, handle) is not S.UNKNOWN
    finally:
        await service.close()
    assert await _state_after_a_restart(tmp_path, handle) is not S.UNKNOWN


async def test_a_retirement_whose_commit_fails_leaves_the_key_verifying(tmp_path: Path) -> None:
    # Retired in memory only: its handles read unknown until a restart made them known again.
    journal = KeysRefused(tmp_path / "j.db")
    service, parent = _service(tmp_path, journal)
    await service.start()
    try:
        handle = await _launch(service, parent)
        kid = service.keyring.active_kid
        journal.refusing = True
        with pytest.raises(JournalError, match="disk is full"):
            await service.retire_key(kid)
        journal.refusing = False
        assert service.keyring.active_kid == kid
        assert await _state(service, parent, handle) is not S.UNKNOWN
        await service.retire_key(kid)  # once it can be committed, it is retired
        assert await _state(service, parent, handle) is S.UNKNOWN
    finally:
        await service.close()
    assert await _state_after_a_restart(tmp_path, handle) is S.UNKNOWN


async def test_concurrent_ring_changes_each_keep_theirs(tmp_path: Path) -> None:
    # Each changes a copy of the ring and puts it in place once committed: two copies of one ring, the later
    # would drop the earlier's change from memory, though both were committed.
    journal = SqliteJournal(tmp_path / "j.db")
    service, _ = _service(tmp_path, journal)
    await service.start()
    try:
        first = service.keyring.active_kid
        new, _ = await asyncio.gather(service.rotate_key(), service.retire_key(first))
        held = {row.kid: row.retired_at is not None for row in service.keyring.export()}
        assert held[new] is False and held[first] is True
        assert sorted(held.items()) == sorted((kid, retired is not None) for kid, _, _, retired in
                                              await journal.load_keys())
    finally:
        await service.close()
