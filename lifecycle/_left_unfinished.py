"""What a start makes of the rows a previous process left unfinished: the job the journal kept for a
launch its engine never got, and the result of a child that process left unfinished.

Apart from `AsyncSubagentLifecycle` because only its start reads them, once a process.
"""

from __future__ import annotations

import json
import logging

from lifecycle._contract import SubagentHandle, SubagentLifecycleError, SubagentState, make_terminal_result_json
from lifecycle._job import PROCESS_EXIT, ChildJob
from lifecycle._journal import JournalRecord, ended_state
from lifecycle._record import Record

log = logging.getLogger("lifecycle.service")

S = SubagentState


def _readable(rows: list[JournalRecord]) -> list[JournalRecord]:
    """The unfinished rows an engine that outlives the process may be handed: those whose record can be read
    back. Handed one that cannot, the engine ran its job, or followed it on, and the start then raised reading
    it (every start, the gateway down); left out, it is marked INTERRUPTED without a result
    (`_interrupted_result`), and a child still running for it runs on with no one following it."""
    readable = []
    for row in rows:
        try:
            Record.from_journal(row)
        except (ValueError, TypeError, SubagentLifecycleError) as exc:
            log.error("child %s: its journal record cannot be read (%s); it is not followed on", row.subagent_id, exc)
            continue
        readable.append(row)
    return readable


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


def _interrupted_result(row: JournalRecord, now: float) -> str | None:
    """The result of a child a stopped process left unfinished: interrupted by process exit, unless a stop was
    asked of it first (journaled: `Supervisor._journal_stop`), whose reason it ends with, and a cancel's state
    (`ended_state`), as it would have had it ended before the process: stopped on purpose, it must not be taken
    for lost, and run again.

    None when the row's handle cannot be read (a damaged file, a bug that wrote it): the row is still made
    terminal, without a result, so no start finds it again. Raising instead made every start fail on that one
    row, the gateway down until someone edited its database; and without its handle nobody can reconnect to
    that child, nor read a result of it (a read of the row says it is unreadable)."""
    try:
        handle = SubagentHandle.from_dict(json.loads(row.handle))
    except (ValueError, TypeError, SubagentLifecycleError) as exc:
        log.error("child %s: its journal record cannot be read (%s); marked %s without a result",
                  row.subagent_id, exc, ended_state(row.state))
        return None
    stop = row.stop_reason
    if stop is not None and row.state == S.CANCEL_REQUESTED.value:  # the row keeps the cancel's own reason
        stop = f"cancellation requested: {stop}"  # as `Record.stop_request` says it
    return make_terminal_result_json(
        handle, ended_state(row.state), error_message=stop or PROCESS_EXIT, error_classification="INTERRUPTED",
        exit_reason="interrupted", started_at=row.started_at, completed_at=now,
    )[1]
