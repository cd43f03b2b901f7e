"""What `SqliteJournal` does when a commit fails or refuses records: a failed commit's retry on its own,
the launches it drops, a launch refused whole for one refused record, and the refusals and failures told
to a launch whose caller was cancelled before it heard, once it asks again.

Apart from `SqliteJournal` (a base of it) because none of it runs while every commit writes every record:
a record's way into a commit and the answer to its waiters (`put`, `flush`, `committed`, `sync_launch`,
`_settle_waiters`) stay there.
"""

from __future__ import annotations

from collections.abc import Collection

from lifecycle._database import SqliteDatabase
from lifecycle._journal import JournalError

_text = SqliteDatabase.text


class CommitFailures:
    """`SqliteJournal`'s failure handling: its pending records, waiters and launches are the journal's own
    (``_pending``, ``_launches``, ...), set by its ``__init__``."""

    def _raise_unheard(self, launch: Collection[str]) -> None:
        error = None
        for subagent_id in launch:
            error = self._unheard.pop(subagent_id, None) or error
        if error is not None:
            if self._dropped:  # heard at last: its caller forgets the children now
                self._dropped.difference_update(launch)
            raise error

    def _raise_unreported(self, launch: Collection[str] | None) -> None:
        """Raise the refusals no caller has heard: every one to a plain sync, which covers every
        record put; to a launch only those of its own records, the others staying for a sync."""
        if launch is None:
            abandoned = self._abandoned
            refused = [r for r in self._unreported if r[0] not in abandoned]
            if not refused:
                return
            self._unreported = [r for r in self._unreported if r[0] in abandoned]
        else:
            refused = [r for r in self._unreported if r[0] in launch]
            if not refused:
                return
            self._unreported = [r for r in self._unreported if r[0] not in launch]
        raise _refusal(refused)

    def _retry_later(self) -> None:
        """Try the records a failed commit left pending again on their own, backing off as the database
        does its lost writes (``lost_retry``). Results published anyway (`Supervisor._publish`) are in
        memory only until then: waiting for the next put, an idle gateway would keep them there, for a
        crash to lose, long after the disk has room again."""
        if self._retry is not None or self._loop is None or self._loop.is_closed() or self._db is None:
            return
        first, most = self._db.lost_retry
        delay = first if self._retry_delay is None else min(self._retry_delay * 2, most)
        self._retry_delay = delay
        self._retry = self._loop.call_later(delay, self._try_again)

    def _try_again(self) -> None:
        self._retry = None
        if self._state == "open" and self._pending:
            self._request()
    def _refuse_launches_whole(self, db: SqliteDatabase) -> None:
        """In `flush`: a launch waiting on this commit one of whose records was refused is refused
        whole. Its other rows, just written, are deleted in the same batch, so the caller, told its
        launch failed and forgetting its children, leaves none for a restart to call INTERRUPTED."""
        refused = dict(self._refused)
        for waiter, ids in self._launches.items():
            if waiter.done():  # its caller gave up: it asks again and hears of its own records
                continue
            cause = next((refused[sid] for sid in ids if sid in refused), None)
            if cause is None:
                continue
            self._dropped.update(ids)
            kind = cause.split(":", 1)[0]
            rest = [sid for sid in ids if sid not in refused]
            if not rest:
                continue
            db.write_many("DELETE FROM lifecycle_records WHERE subagent_id = ?", [(_text(sid),) for sid in rest])
            self._refused.extend((sid, f"{kind}: refused with its launch") for sid in rest)

    def _drop_launches(self, error: BaseException) -> list[tuple[str, ...]]:
        """Refuse every launch waiting on a failed commit: its records leave the pending ones, so
        a child never started is never written by a later commit (to be listed, or called
        INTERRUPTED after a restart). Its waiter hears why; the other writes are kept."""
        dropped = []
        refusal = JournalError(f"Not launched: the journal could not record the launch ({error}); nothing of it"
                               " was kept, launch again once its database can be written",
                               code="JOURNAL_WRITE_FAILED")
        refusal.__cause__ = error
        for waiter, ids in self._launches.items():
            if waiter.done():  # its caller gave up: it finishes those children itself
                continue
            for subagent_id in ids:
                self._pending.pop(subagent_id, None)
            self._dropped.update(ids)
            waiter.set_exception(refusal)
            dropped.append(ids)
        return dropped


def _refusal(refused: list[tuple[str, str]]) -> JournalError:
    ids = tuple(subagent_id for subagent_id, _ in refused)
    code = "JOURNAL_CONFLICT" if all(r.startswith("conflict") for _, r in refused) else "JOURNAL_REJECTED"
    return JournalError(f"Journal refused records: {', '.join(ids)}.", code=code, subagent_ids=ids)
