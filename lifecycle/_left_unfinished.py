"""What a start makes of the rows a previous process left unfinished: the job the journal kept for a
launch its engine never got, and the result of a child that process left unfinished.

Apart from `AsyncSubagentLifecycle` because only its start reads them, once a process.
"""

from __future__ import annotations

import json
import logging

from lifecycle._contract import SubagentHandle, SubagentState, make_terminal_result_json
from lifecycle._job import PROCESS_EXIT, ChildJob
from lifecycle._journal import JournalRecord, ended_state

log = logging.getLogger("lifecycle.service")

S = SubagentState


def _kept_job(row: JournalRecord) -> ChildJob | None:
    """The job the journal kept for an engine that never reported holding it; None when it kept none.
    One this version cannot read (a later version wrote it) is left out, its child then INTERRUPTED:
    a start that raised would leave the gateway down."""
    if row.job is None:
        return None
    try:
        return ChildJob.from_dict(json.loads(row.job))
    except (ValueError, TypeError, KeyError) as exc:
        log.error("child %s: its launch's job cannot be read (%s); it is not started", row.subagent_id, exc)
        return None


def _interrupted_result(row: JournalRecord, now: float) -> str:
    """The result of a child a stopped process left unfinished: interrupted by process exit, unless a stop was
    asked of it first (journaled: `Supervisor._journal_stop`), whose reason it ends with, and a cancel's state
    (`ended_state`), as it would have had it ended before the process: stopped on purpose, it must not be taken
    for lost, and run again."""
    handle = SubagentHandle.from_dict(json.loads(row.handle))
    stop = row.stop_reason
    if stop is not None and row.state == S.CANCEL_REQUESTED.value:  # the row keeps the cancel's own reason
        stop = f"cancellation requested: {stop}"  # as `Record.stop_request` says it
    return make_terminal_result_json(
        handle, ended_state(row.state), error_message=stop or PROCESS_EXIT, error_classification="INTERRUPTED",
        exit_reason="interrupted", started_at=row.started_at, completed_at=now,
    )[1]

