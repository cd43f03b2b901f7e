"""What the service keeps in memory about finished children stays bounded."""

from lifecycle import CONTRACT_VERSION, SubagentHandle, SubagentState, _tallies
from lifecycle._contract import make_terminal_result
from lifecycle._record import Record
from lifecycle._tallies import Tallies


def finished(i: int, *, parent: str = "p", turn: str = "t", completed_at: float = 100.0, keep: bool = True):
    handle = SubagentHandle(CONTRACT_VERSION, f"sa-{i}", parent, None, 1.0, None, None, "leaf", 1, "cap")
    record = Record(handle, f"goal {i}", 1.0)
    record.turn_id, record.keep_result, record.completed_at = turn, keep, completed_at
    record.state = SubagentState.SUCCEEDED
    record.result = make_terminal_result(handle, SubagentState.SUCCEEDED, summary="ok", completed_at=completed_at)
    return record


def test_results_are_kept_for_children_whose_handles_are_out_and_only_the_newest(monkeypatch):
    monkeypatch.setattr(_tallies, "RESULTS_KEPT", 3)
    tallies = Tallies()
    for i in range(5):
        record = finished(i, keep=i != 4)
        tallies.finished(record, record.result)
    assert [tallies.result(f"sa-{i}") is not None for i in range(5)] == [False, True, True, True, False]


def test_turn_progress_counts_until_the_last_child_of_the_turn_ends():
    tallies = Tallies()
    tallies.launched("p", "t")
    tallies.launched("p", "t")
    assert tallies.turn_progress("p", "t") == (0, 2)
    first, second = finished(1), finished(2)
    tallies.finished(first, first.result)
    assert tallies.turn_progress("p", "t") == (1, 2)
    tallies.finished(second, second.result)
    assert tallies.turn_progress("p", "t") == (0, 0)


def test_the_sweep_trims_results_after_a_minute_and_recent_children_after_the_retention():
    tallies = Tallies()
    old, young = finished(1, completed_at=100.0), finished(2, completed_at=150.0)
    for record in (old, young):
        tallies.finished(record, record.result)
    tallies.sweep(cutoff=0.0, now=200.0)  # retention not reached; results older than 60 s go
    assert tallies.result("sa-1") is None and tallies.result("sa-2") is not None
    assert [c.subagent_id for c in tallies.recent("p")] == ["sa-1", "sa-2"]
    tallies.sweep(cutoff=120.0, now=200.0)
    assert [c.subagent_id for c in tallies.recent("p")] == ["sa-2"]
    tallies.sweep(cutoff=1000.0, now=1000.0)
    assert tallies.recent("p") == () and tallies.result("sa-2") is None
