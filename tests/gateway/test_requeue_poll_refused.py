"""The poll for events ``switchboard inbox retry`` handed back, while the state database refuses it."""

from __future__ import annotations

import logging

from agent.testing import FakeClock
from gateway.dead_letters import REQUEUE_POLL_SECONDS
from gateway.testing import RecordingAdapter, make_config
from tests.sqlite_errors import full_disk


async def test_a_refused_poll_is_one_line_and_a_failing_one_keeps_its_traceback(tmp_path, gateways, caplog):
    # Each poll (every 2 s) the database refused wrote a full traceback of an expected storage error.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [chat], clock=clock)
    take = gateway.store.inbox.take_requeued
    failures = [full_disk(), full_disk(), RuntimeError("a bug")]
    polls: list[int] = []

    def refusing(**kwargs):
        polls.append(1)
        if failures:
            raise failures.pop(0)
        return take(**kwargs)

    gateway.store.inbox.take_requeued = refusing
    caplog.set_level(logging.WARNING, logger="gateway.dead_letters")
    for _ in range(4):  # refused twice, a bug, then read again
        await clock.until_sleeping(lasting=REQUEUE_POLL_SECONDS)
        clock.advance(REQUEUE_POLL_SECONDS)
    await clock.until_sleeping(lasting=REQUEUE_POLL_SECONDS)  # the poll after the last advance is done
    assert len(polls) == 4
    logged = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records
              if r.name == "gateway.dead_letters"]
    refused = ("WARNING", "taking up re-queued events failed: the state database refused it (OperationalError: "
               "database or disk is full); looking again in 2.0 s", False)
    assert logged == [refused, refused, ("ERROR", "taking up re-queued events failed", True)]
