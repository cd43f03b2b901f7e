"""What the service keeps in memory about children beyond the live ones: recent results,
the last few finished children of each session, and each parent turn's progress.
Everything here is bounded, so memory does not grow with history."""

from __future__ import annotations

from collections import OrderedDict, deque

from lifecycle._contract import SubagentResult
from lifecycle._record import Record
from lifecycle._snapshot import ChildSnapshot, snapshot

RECENT_PER_SESSION = 10
RESULTS_KEPT = 16_384
"""Finished children launched through the plugin API (whose handles are out) whose results stay
in memory, so the `result()` a plugin calls right after `wait()` costs no journal read; older
ones are read back from the journal."""
RESULTS_KEPT_SECONDS = 60.0
"""...and for at most about this long after they finished (trimmed by the retention sweep)."""


class Tallies:
    """Use from the service's event loop only."""

    __slots__ = ("_results", "_recent", "_turns")

    def __init__(self) -> None:
        self._results: OrderedDict[str, SubagentResult] = OrderedDict()
        """Results of recently finished children, oldest first."""
        self._recent: dict[str, deque[Record]] = {}
        """The last few finished children per parent session, for listings such as /agents
        (finished records never change: they are snapshotted when asked for)."""
        self._turns: dict[tuple[str, str], list[int]] = {}
        """[finished, launched] children per (parent session, parent turn) while any runs."""

    def launched(self, parent_session_id: str, turn_id: str) -> None:
        counts = self._turns.get((parent_session_id, turn_id))
        if counts is None:
            self._turns[(parent_session_id, turn_id)] = [0, 1]
        else:
            counts[1] += 1

    def not_launched(self, record: Record) -> None:
        """``record``'s launch was refused (its journal write failed): it was counted in its turn's
        progress when made, and will never finish to balance that."""
        key = (record.handle.parent_session_id or "", record.turn_id)
        counts = self._turns.get(key)
        if counts is not None:
            counts[1] -= 1
            if counts[0] >= counts[1]:
                del self._turns[key]

    def finished(self, record: Record, result: SubagentResult) -> None:
        parent_id = record.handle.parent_session_id or ""
        key = (parent_id, record.turn_id)
        counts = self._turns.get(key)
        if counts is not None:
            counts[0] += 1
            if counts[0] >= counts[1]:
                del self._turns[key]
        recent = self._recent.get(parent_id)
        if recent is None:
            recent = self._recent[parent_id] = deque(maxlen=RECENT_PER_SESSION)
        recent.append(record)
        if record.keep_result:
            self.remember(result)

    def remember(self, result: SubagentResult) -> None:
        """Keep a finished child's result in memory for a while."""
        results = self._results
        results[result.handle.subagent_id] = result
        if len(results) > RESULTS_KEPT:
            results.popitem(last=False)

    def result(self, subagent_id: str) -> SubagentResult | None:
        return self._results.get(subagent_id)

    def recent(self, parent_session_id: str) -> tuple[ChildSnapshot, ...]:
        return tuple(snapshot(r, "finished") for r in self._recent.get(parent_session_id, ()))

    def turn_progress(self, parent_session_id: str, turn_id: str) -> tuple[int, int]:
        counts = self._turns.get((parent_session_id, turn_id))
        return (counts[0], counts[1]) if counts else (0, 0)

    def sweep(self, cutoff: float, now: float) -> None:
        """Forget children completed before ``cutoff`` (the retention window, as the journal
        does), and results older than `RESULTS_KEPT_SECONDS` (the journal still has them)."""
        results = self._results
        kept_from = max(cutoff, now - RESULTS_KEPT_SECONDS)
        for sid, result in list(results.items()):
            if (result.completed_at or 0.0) < kept_from:
                del results[sid]
        for parent_id, recent in list(self._recent.items()):
            while recent and (recent[0].completed_at or 0.0) < cutoff:
                recent.popleft()
            if not recent:
                del self._recent[parent_id]
