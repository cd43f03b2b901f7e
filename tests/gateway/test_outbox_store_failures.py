"""The outbox when its database fails: a part whose outcome cannot be recorded, or that cannot be
read, holds its chat (backing off, logged) until it is settled; nothing overtakes it, nothing
is sent twice, and other chats go on. The failures are real: SQLite itself refuses the one
statement (a trigger raising, an authorizer denying reads), as a full disk or a failing device
would."""

from __future__ import annotations

import logging
import random
import sqlite3
from collections.abc import AsyncIterator

import pytest

from agent.testing import FakeClock
from gateway.credential_hold import FIRST_PROBE
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import Forbidden, NetworkError, Unauthorized
from tests.gateway.test_outbox import WAIT, FakeAdapter

REFUSE = {  # each refuses, in chat c1 only, the write that records what became of a part
    "sent": "CREATE TRIGGER refuse BEFORE UPDATE OF status ON gateway_outbox"
            " WHEN NEW.status = 'sent' AND NEW.chat_id = 'c1'"
            " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
    "failed": "CREATE TRIGGER refuse BEFORE UPDATE OF status ON gateway_outbox"
              " WHEN NEW.status = 'failed' AND NEW.chat_id = 'c1'"
              " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
    "retried": "CREATE TRIGGER refuse BEFORE UPDATE OF attempts ON gateway_outbox"
               " WHEN NEW.status = 'pending' AND NEW.chat_id = 'c1'"
               " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
}
OUTCOME = {  # what the platform does with the first part, and how often it is asked to
    "sent": ([], 1),
    "failed": ([Forbidden("bot was blocked")], 1),  # final: not asked again
    "retried": ([NetworkError("HTTP 502")] * 3, 4),  # asked until it goes
}


@pytest.fixture
async def setup(tmp_path) -> AsyncIterator[tuple[GatewayStore, FakeAdapter, Outbox, FakeClock]]:
    clock = FakeClock(autojump=False)
    state = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter = FakeAdapter(clock=clock)
    # Unbounded (`gateway.long_messages`): a long answer's hundreds of rows are what fill the disk here.
    outbox = Outbox(state.outbox, {"fake": adapter}, clock=clock, rng=random.Random(7), max_parts=lambda _: 0)
    await outbox.start()
    yield state, adapter, outbox, clock
    await outbox.close()
    state.close()


async def recover(outbox: Outbox, clock: FakeClock) -> None:
    """The store works again: time runs (every wait passes at once) until the outbox is idle."""
    clock.autojump = True
    clock.advance(60)  # past the chat's backoff
    assert await outbox.flush(timeout=WAIT)


@pytest.mark.parametrize("refused", REFUSE)
async def test_a_part_whose_outcome_cannot_be_recorded_holds_its_chat_until_it_is(setup, caplog, refused):
    state, adapter, outbox, clock = setup
    errors, calls = OUTCOME[refused]
    adapter.fail_next(*errors, chat="c1")
    state.db.write(REFUSE[refused])
    outbox.enqueue("fake", "c1", None, "first", kind="reply", key="a")
    outbox.enqueue("fake", "c1", None, "second", kind="reply", key="b")
    outbox.enqueue("fake", "c2", None, "elsewhere", kind="reply", key="c")
    for _ in range(2):  # the chat backs off and tries again, the store still refusing
        await clock.until_sleeping()
        await adapter.until(lambda: "elsewhere" in adapter.texts())  # other chats go on
        assert "second" not in adapter.texts()  # nothing overtakes the unsettled part
        assert [state.outbox.message(k).status for k in ("a:0", "b:0")] == ["pending", "pending"]
        clock.advance(60)
    errors_logged = [r for r in caplog.records if r.name == "gateway.outbox" and r.levelno == logging.ERROR]
    assert errors_logged and all("c1" in r.getMessage() for r in errors_logged)

    state.db.write("DROP TRIGGER refuse")
    await recover(outbox, clock)
    assert [text for _, chat, text, _ in adapter.calls if chat == "c1"] == ["first"] * calls + ["second"]
    assert adapter.texts("c1") == (["second"] if refused == "failed" else ["first", "second"])
    assert state.outbox.message("a:0").status == ("failed" if refused == "failed" else "sent")
    assert state.outbox.message("b:0").status == "sent"


async def test_a_part_that_cannot_be_marked_tried_is_not_sent_until_it_is(tmp_path, caplog):
    # A restart looks up only the parts marked tried: one sent unmarked could go out twice. Journaled
    # before the start, the parts are untried, so the sender marks each before its call.
    clock = FakeClock(autojump=False)
    state = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter = FakeAdapter(clock=clock)
    outbox = Outbox(state.outbox, {"fake": adapter}, clock=clock, rng=random.Random(7))
    try:
        outbox.enqueue("fake", "c1", None, "first", kind="reply", key="a")
        outbox.enqueue("fake", "c1", None, "second", kind="reply", key="b")
        outbox.enqueue("fake", "c2", None, "elsewhere", kind="reply", key="c")
        state.db.write("CREATE TRIGGER refuse BEFORE UPDATE OF tried ON gateway_outbox WHEN NEW.chat_id = 'c1'"
                       " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
        await outbox.start()
        for _ in range(2):  # the chat backs off and tries again, the store still refusing
            await clock.until_sleeping()
            await adapter.until(lambda: "elsewhere" in adapter.texts())  # other chats go on
            assert adapter.texts("c1") == [] and not state.outbox.message("a:0").tried
            clock.advance(60)
        assert any(r.name == "gateway.outbox" and r.levelno == logging.ERROR and "c1" in r.getMessage()
                   for r in caplog.records)
        state.db.write("DROP TRIGGER refuse")
        await recover(outbox, clock)
        assert [text for _, chat, text, _ in adapter.calls if chat == "c1"] == ["first", "second"]
    finally:
        await outbox.close()
        state.close()


async def test_a_part_that_cannot_be_read_holds_its_chat_until_it_can(setup, caplog):
    state, adapter, outbox, clock = setup
    outbox.enqueue("fake", "c1", None, "first", kind="reply", key="a")
    outbox.enqueue("fake", "c1", None, "second", kind="reply", key="b")

    def no_reading_the_outbox(action: int, table: str | None, *_: object) -> int:
        refused = action == sqlite3.SQLITE_READ and table == "gateway_outbox"
        return sqlite3.SQLITE_DENY if refused else sqlite3.SQLITE_OK

    state.db._conn.set_authorizer(no_reading_the_outbox)  # before the chat's sender takes its first part
    for _ in range(2):
        await clock.until_sleeping()
        assert adapter.calls == []
        clock.advance(60)
    assert any(r.name == "gateway.outbox" and r.levelno == logging.ERROR for r in caplog.records)

    state.db._conn.set_authorizer(None)
    await recover(outbox, clock)
    assert adapter.texts() == ["first", "second"]


async def test_a_reply_journaled_just_before_a_full_disk_refused_another_write_is_still_sent(setup):
    # A full disk makes SQLite roll back every write not yet committed, not just the one it refused.
    state, adapter, outbox, clock = setup
    await state.db.durable()
    outbox.enqueue("fake", "c1", None, "answer", kind="reply", key="a")  # fits the pages there are
    (pages,) = state.db.read_one("PRAGMA page_count")
    state.db.read(f"PRAGMA max_page_count={pages}")  # the disk is full
    with pytest.raises(sqlite3.OperationalError):
        outbox.enqueue("fake", "c2", None, "a long answer " * 3000, kind="reply", key="b")
    state.db.read("PRAGMA max_page_count=1000000")  # room again
    await recover(outbox, clock)
    assert adapter.texts("c1") == ["answer"]
    assert state.outbox.message("a:0").status == "sent"


async def test_a_part_whose_send_cannot_be_committed_waits_for_the_store_and_is_never_given_up_on(tmp_path, caplog):
    # The journal's commit before a send fails (a full disk): the platform never saw the part,
    # so no give_up_after deadline may run out on it; the chat holds until the store recovers.
    clock = FakeClock(autojump=False)
    state = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter = FakeAdapter(clock=clock)
    outbox = Outbox(state.outbox, {"fake": adapter}, clock=clock, rng=random.Random(7), give_up_after={"fake": 10.0})
    await outbox.start()

    def no_committing(action: int, arg1: str | None, *_: object) -> int:
        refused = action == sqlite3.SQLITE_TRANSACTION and arg1 == "COMMIT"
        return sqlite3.SQLITE_DENY if refused else sqlite3.SQLITE_OK

    try:
        state.db._conn.set_authorizer(no_committing)
        outbox.enqueue("fake", "c1", None, "first", kind="reply", key="a")
        outbox.enqueue("fake", "c1", None, "second", kind="reply", key="b")
        for _ in range(4):  # 240 s, far past give_up_after, the store refusing every commit
            await clock.until_sleeping()
            assert adapter.calls == []  # nothing reaches the platform before it is journaled
            assert [state.outbox.message(k).status for k in ("a:0", "b:0")] == ["pending", "pending"]
            clock.advance(60)
        assert any(r.name == "gateway.outbox" and r.levelno == logging.ERROR and "c1" in r.getMessage()
                   for r in caplog.records)

        state.db._conn.set_authorizer(None)
        await recover(outbox, clock)
        assert adapter.texts("c1") == ["first", "second"]
        assert [state.outbox.message(k).status for k in ("a:0", "b:0")] == ["sent", "sent"]
    finally:
        await outbox.close()
        state.close()


async def test_a_part_the_platform_takes_as_it_takes_the_token_again_is_sent_once_though_the_store_refuses(
        setup, caplog):
    # The probe that ends a hold (`gateway.credential_hold`) is a part sent: the store refusing to
    # record the hold's end must not have it sent again, nor keep the chats held behind it waiting.
    state, adapter, outbox, clock = setup
    adapter.fail_next(Unauthorized("token revoked"), chat="c1")
    outbox.enqueue("fake", "c1", None, "first", kind="reply", key="a")
    await clock.until_sleeping(lasting=FIRST_PROBE)
    outbox.enqueue("fake", "c2", None, "elsewhere", kind="reply", key="c")
    await clock.until_sleeping(lasting=FIRST_PROBE, count=2)
    state.db.write("CREATE TRIGGER refuse BEFORE UPDATE ON gateway_credential_holds"
                   " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    clock.advance(FIRST_PROBE)  # the token is fixed: the probe goes
    assert await outbox.wait_sent("a:0", timeout=WAIT) is not None
    assert await outbox.wait_sent("c:0", timeout=WAIT) is not None
    state.db.write("DROP TRIGGER refuse")
    await recover(outbox, clock)
    assert adapter.texts("c1") == ["first"] and adapter.texts("c2") == ["elsewhere"]
    [error] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert error == "outbox: could not record that fake's credential hold ends (IntegrityError: database or disk is full)"


async def test_time_the_database_held_a_chat_back_does_not_count_toward_giving_up(setup):
    # The platform fails once, then the store cannot be read for two hours, then the platform fails
    # twice more: the message still goes, as the platform has not been failing for an hour.
    state, adapter, outbox, clock = setup
    adapter.fail_next(*[NetworkError("HTTP 502")] * 3, chat="c1")
    outbox.enqueue("fake", "c1", None, "first", kind="reply", key="a")
    outbox.enqueue("fake", "c1", None, "second", kind="reply", key="b")
    await clock.until_sleeping()  # its retry after the first 502
    assert len(adapter.calls) == 1

    def no_reading_the_outbox(action: int, table: str | None, *_: object) -> int:
        refused = action == sqlite3.SQLITE_READ and table == "gateway_outbox"
        return sqlite3.SQLITE_DENY if refused else sqlite3.SQLITE_OK

    state.db._conn.set_authorizer(no_reading_the_outbox)
    for _ in range(130):  # the chat backs off, at most a minute at a time, the store refusing
        clock.advance(60)
        await clock.until_sleeping()
    assert len(adapter.calls) == 1
    state.db._conn.set_authorizer(None)
    await recover(outbox, clock)
    assert [state.outbox.message(k).status for k in ("a:0", "b:0")] == ["sent", "sent"]
    assert adapter.texts("c1") == ["first", "second"] and len(adapter.calls) == 5  # first: three 502s, then sent
