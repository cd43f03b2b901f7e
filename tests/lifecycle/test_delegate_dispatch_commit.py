"""A background dispatch is handed to the host before its children's PENDING rows commit, so that what the
host writes to the journal's database commits with them: recorded in a commit of its own, after theirs, a
crash or a full disk between the two left children that ran with nothing to deliver their results."""

import sqlite3

import pytest

from tests.lifecycle.test_delegate import delegate


@pytest.fixture
async def denv(make_env):
    return await make_env(delegate=True)


def committed_children(path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT subagent_id FROM lifecycle_records")}
    finally:
        conn.close()


async def test_the_hosts_record_of_a_dispatch_commits_with_its_children(denv):
    db = denv.service.journal.db
    db.write("CREATE TABLE host_rows (delegation_id TEXT, subagent_id TEXT)")
    await db.durable()
    seen, told = [], []

    def on_dispatch(dispatch):
        seen.append(committed_children(db.path))  # as a process killed now would leave the file
        db.write_many("INSERT INTO host_rows VALUES (?, ?)", [(dispatch.delegation_id, t.subagent_id)
                                                               for t in dispatch.tasks])
        return told.append

    await delegate(denv, {"tasks": [{"goal": "[hang] a"}, {"goal": "[hang] b"}]}, mode="background",
                   on_dispatch=on_dispatch)
    assert told == [True]
    [before] = seen
    conn = sqlite3.connect(db.path)
    try:
        recorded = {r[0] for r in conn.execute("SELECT subagent_id FROM host_rows")}
    finally:
        conn.close()
    assert len(recorded) == 2 and not recorded & before  # not yet committed when the host was told
    assert recorded <= committed_children(db.path)  # committed together, once the call returns
