"""A background delegation whose host cannot record it for a full disk: the model is told what a launch the
journal refused tells it, not to try again at once."""

import asyncio
import logging
import sqlite3

import pytest

from agent import ToolError
from lifecycle import SubagentState
from tests.lifecycle.test_delegate import delegate


@pytest.fixture
async def denv(make_env):
    return await make_env(delegate=True)


def full_store(path) -> sqlite3.Connection:
    """A host's store on a disk with no room left: its next insert raises SQLite's "database or disk is full"."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE delegations (row BLOB)")
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    conn.execute(f"PRAGMA max_page_count={pages}")
    return conn


async def test_a_dispatch_the_full_disk_keeps_from_being_recorded_is_refused_as_not_recorded(denv, tmp_path, caplog):
    # It said "the subagents could not be started; try again": the model tried again at once, launching and
    # stopping children on a disk still full, and the log had a traceback for each.
    store = full_store(tmp_path / "store.db")

    def on_dispatch(dispatch) -> None:
        store.execute("INSERT INTO delegations VALUES (zeroblob(100000))")

    with caplog.at_level(logging.ERROR, logger="lifecycle.delegate"), pytest.raises(ToolError) as refused:
        await delegate(denv, {"tasks": [{"goal": "[hang] a"}, {"goal": "[hang] b"}]}, mode="background",
                       on_dispatch=on_dispatch)
    text = str(refused.value)
    assert text.startswith("No subagent was started: the state database cannot be written right now")
    assert "try again" not in text and "OperationalError" not in text
    [record] = [r for r in caplog.records if r.name == "lifecycle.delegate"]
    assert record.exc_info is None and "database or disk is full" in record.getMessage()
    view = denv.service.host_view()
    async with asyncio.timeout(5):  # the children it launched are stopped, none left to run for no one
        while view.children("parent-1"):
            await asyncio.sleep(0.005)
    assert {c.state for c in view.recent("parent-1")} == {SubagentState.INTERRUPTED}
    store.close()


async def test_a_dispatch_the_host_fails_to_record_otherwise_still_says_try_again(denv):
    def on_dispatch(dispatch) -> None:
        raise LookupError("no gateway session")

    with pytest.raises(ToolError, match="the subagents could not be started; try again"):
        await delegate(denv, {"goal": "[hang] a"}, mode="background", on_dispatch=on_dispatch)
