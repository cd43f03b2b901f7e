"""A start that finds a damaged row in the journal (a handle that is no JSON, or no handle) starts anyway:
the row is made terminal, without a result, and every other unfinished child is handled as always.
Before, the one row made every start raise, and the gateway stayed down until someone edited its file."""

from __future__ import annotations

import json
import sqlite3

from lifecycle import SqliteJournal, SubagentHandle, SubagentLaunchRequest, SubagentResult, SubagentState
from tests.lifecycle.journal_records import record
from tests.lifecycle.test_engine import KilledBeforeSending, WorkerEngine, Workers

S = SubagentState


def _handle(subagent_id: str) -> str:
    return json.dumps(SubagentHandle(1, subagent_id, "session-1", None, 1.5, None, None, "leaf", 1, "v1.k.x").to_dict())


async def _leave(path, *records) -> None:
    journal = SqliteJournal(path)
    await journal.open()
    await journal.save_key("k", b"s" * 32, 1.0, None)  # the key their handles name: a journal with children has one
    for rec in records:
        journal.put(rec)
    await journal.sync()
    await journal.close()


async def test_a_start_marks_rows_it_cannot_read_terminal_and_interrupts_the_others(make_env, tmp_path, caplog):
    await _leave(
        tmp_path / "journal.db",
        record("fine", "RUNNING", handle=_handle("fine")),
        record("no-json", "RUNNING", handle="{not json"),
        record("no-handle", "CANCEL_REQUESTED", handle='{"subagent_id": "no-handle"}', stop_reason="enough"),
    )
    env = await make_env()  # raised SubagentLifecycleError("Malformed subagent handle.")
    journal = env.service.journal
    assert await journal.unfinished() == []  # none is found again by the next start
    fine = await journal.get("fine")
    result = SubagentResult.from_dict(json.loads(fine.result))
    assert (fine.state, result.state) == ("INTERRUPTED", S.INTERRUPTED)
    assert result.error_message == "interrupted by process exit"
    no_json, no_handle = await journal.get("no-json"), await journal.get("no-handle")
    assert (no_json.state, no_json.result, no_json.completed_at is not None) == ("INTERRUPTED", None, True)
    assert (no_handle.state, no_handle.result) == ("CANCELLED", None)  # a cancel was asked of it
    assert "child no-json: its journal record cannot be read" in caplog.text


async def test_an_engine_that_outlives_the_process_is_not_handed_a_row_no_one_can_read(make_env):
    workers = Workers()
    first = await make_env(engine=KilledBeforeSending(workers), db="shared.db")  # the journal keeps the jobs
    with first.turn():
        damaged = await first.service.launch(SubagentLaunchRequest(goal="its row is damaged"))
        fine = await first.service.launch(SubagentLaunchRequest(goal="its row is fine"))
    await first.service.close()
    path = first.service.journal.db.path
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE lifecycle_records SET handle = '{not json' WHERE subagent_id = ?", (damaged.subagent_id,))
    conn.close()

    second = await make_env(engine=WorkerEngine(workers), db="shared.db")  # raised "Malformed subagent handle."
    # Its job is not run for no one: nobody could reconnect to it, and its end could not be recorded.
    assert damaged.subagent_id not in workers.jobs
    row = await second.service.journal.get(damaged.subagent_id)
    assert (row.state, row.result, row.job) == ("INTERRUPTED", None, None)
    with second.turn():
        assert (await second.service.wait(fine, timeout_seconds=5)).state is S.SUCCEEDED
