"""The key ring's changes: rotating in a fresh key, retiring one, each signing only once committed.

Apart from `AsyncSubagentLifecycle` (a base of it) because an operator or plugin changes the ring now and
then, and no child's launch, wait or result passes here.
"""

from __future__ import annotations

from lifecycle._capability import KeyRing
from lifecycle._contract import SubagentLifecycleError
from lifecycle._routing import echoed


class KeyRotation:
    """The service's key ring operations: its journal, supervisor and ``_ring_change`` lock are the
    service's own, set by its ``__init__``."""

    async def rotate_key(self) -> str:
        """Sign new handles with a fresh key; handles signed before keep working. Returns its id once the
        ring is committed, and signs with it only from then on (`_commit_ring`); if the commit fails, raises
        the journal's error (`JournalError`), the ring unchanged."""
        self._require_started()
        async with self._ring_change:
            ring = self.keyring.copy()
            kid = ring.rotate()
            await self._commit_ring(ring)
        return kid

    async def retire_key(self, kid: str) -> None:
        """Revoke every handle signed with ``kid`` (they read as unknown once it returns: see `_commit_ring`).
        Idempotent; raises `SubagentLifecycleError` (``UNKNOWN_KEY``) for a key id the ring does not hold, and
        the journal's error (`JournalError`) if the commit fails, the ring unchanged."""
        self._require_started()
        async with self._ring_change:
            ring = self.keyring.copy()
            try:
                ring.retire(kid)
            except (KeyError, TypeError):  # TypeError: an unhashable kid
                # `echoed`: a caller's kid of a megabyte (or a list of a million items) came back whole.
                raise SubagentLifecycleError(f"Unknown handle key {echoed(kid)}.", code="UNKNOWN_KEY") from None
            await self._commit_ring(ring)

    async def _commit_ring(self, ring: KeyRing) -> None:
        """Sign and verify with ``ring`` once it is committed, not before. Changed in memory first, a ring
        whose commit failed went on signing with the new key, or refusing the retired one, until the restart
        undid it: handles signed meanwhile read unknown after it, and a retired key verified again. Nor rolled
        back on failure: a launch run between the failed commit and the roll-back (tasks woken before it)
        would sign with a key that is gone, its handle unknown at once. Meanwhile a launch signs with the key
        signing now, retiring or not (a handle signed with a key being retired is revoked with it)."""
        await self.journal.save_keys(ring.export())
        self._supervisor.keyring = ring

    async def _save_keys(self) -> None:
        # The start's ring (a first key made for an empty journal), in one transaction, before any launch is
        # taken; later changes commit a copy first (`_commit_ring`).
        await self.journal.save_keys(self.keyring.export())
