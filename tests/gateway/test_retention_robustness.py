"""The retention sweep when a step fails, and what it keeps for a card's final edit: idle sessions leave
memory while a full disk refuses the deletes, each failing step said once; a delegation whose card still owes
its final edit, and the card's message, outlive the week; a batch forgets only its own rows' attempts."""

from __future__ import annotations

import logging

from agent.testing import FakeClock
from gateway.retention import IDLE_SESSION_SECONDS
from gateway.store import GatewayStore
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_card_full_disk import refusing_card_final_edits
from tests.gateway.test_card_restart import DONE, restarted
from tests.gateway.test_delegate_full_disk import lose_the_batch_for_good
from tests.gateway.test_ledger import delegating_with_cards, no_settling
from tests.polling import until

DAY = 24 * 3600.0
TABLES = ("inbox", "outbox", "delegations", "last_seen", "held")
STEPS = (*(f"forgetting old {table} rows" for table in TABLES), "removing the copies of files no send names")


def said(caplog) -> list[tuple[int, str]]:
    """What the sweep said of its steps (not what it forgot)."""
    return [(r.levelno, r.getMessage()) for r in caplog.records
            if r.name == "gateway.retention" and not r.getMessage().startswith("retention: forgot ")]


async def test_idle_sessions_leave_memory_while_the_full_disk_refuses_the_deletes_each_step_said_once(
        tmp_path, gateways, caplog):
    # Before, the first prune's refusal raised out of the sweep: no session left memory until there was room
    # again (memory grew with every chat meanwhile), and the sweep logged an ERROR with its traceback each time.
    caplog.set_level(logging.INFO, logger="gateway.retention")
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "hi"}]]},
                             clock=FakeClock(autojump=False))
    await chat.say("hello", chat="idle")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    gateway.sessions.find("chat", "idle", None).last_active -= IDLE_SESSION_SECONDS + 1
    db = gateway.store.db
    lose_the_batch_for_good(db)  # every write, and every read, refused until there is room
    try:
        assert gateway.retention.sweep() == (0, 0, 1) and not len(gateway.sessions)
    finally:
        db._conn.execute("PRAGMA max_page_count=1073741823")  # room again, also for the stop if that failed
    lose_the_batch_for_good(db)
    refused = said(caplog)
    assert [level for level, _ in refused] == [logging.WARNING] * len(STEPS)
    for (_, line), step in zip(refused, STEPS, strict=True):
        assert line.startswith(f"retention: {step} failed (OperationalError: database or disk"
                               " is full); tried again at each sweep")
    assert await gateway.retention.sweep_in_batches() == (0, 0, 0)
    gateway.retention.sweep()
    assert said(caplog) == refused  # the same refusals: not said again

    db._conn.execute("PRAGMA max_page_count=1073741823")  # room again
    assert gateway.retention.sweep() == (0, 0, 0)
    assert said(caplog)[len(refused):] == [(logging.INFO, f"retention: {step} goes through again")
                                           for step in STEPS]
    gateway.retention.sweep()
    assert len(said(caplog)) == 2 * len(STEPS)
    await chat.say("hello again", chat="idle")  # loaded back from the store
    await chat.wait_for(lambda: len(chat.messages) == 2)


async def test_a_card_owed_its_final_edit_for_over_a_week_is_still_finished(tmp_path, gateways, caplog):
    # Its platform left the configuration for over a week (or the store refused the edit that long). Before,
    # the sweep forgot the settled delegation, card owed or not, and the card's message with the week's
    # outbox rows: the next start with the platform found no card owed, and the card read as running for good.
    chat, model, gateway, clock = await delegating_with_cards(tmp_path, gateways,
                                                              lambda r: {"wait": "work", "text": "found"})
    card = next(m for m in chat.messages if m.kind == "notice")
    connection = gateway.store.db._conn
    connection.set_authorizer(no_settling)
    model.release("work")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await until(lambda: not gateway.runner.busy)
    connection.set_authorizer(refusing_card_final_edits)
    gateway.retention.sweep()  # settles it; its card's final edit refused: owed
    await gateway.stop(grace=0)

    clock.advance(8 * DAY)
    gateway2, _ = await restarted(tmp_path, gateways, RecordingAdapter("other"), clock)  # without "chat"
    [owed] = gateway2.store.delegations.cards_owed()
    await gateway2.retention.sweep_in_batches()
    assert [row.delegation_id for row in gateway2.store.delegations.cards_owed()] == [owed.delegation_id]
    await gateway2.stop(grace=0)

    gateway3, _ = await restarted(tmp_path, gateways, chat, clock)
    await settled(gateway3)
    assert card.edits == [DONE] and chat.texts() == ["on it", DONE, "results: alpha"]  # edited, not sent anew
    assert gateway3.store.delegations.cards_owed() == []
    gateway3.retention.sweep()  # finished: forgotten like any other
    assert gateway3.store.delegations.get(owed.delegation_id) is None


def test_a_message_an_edit_still_to_be_sent_is_of_outlives_the_week(tmp_path):
    # A card's final edit is tried until its platform takes it. Before, after a week down the card's message
    # was forgotten under it: the edit, once the platform took messages again, found no message id and was
    # sent as a new message, the card reading as running for good.
    clock = FakeClock(autojump=False)
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    try:
        db = store.db
        old = clock.time() - 8 * DAY
        db.write_many("INSERT INTO gateway_outbox (key, platform, chat_id, kind, op, target_key, text, silent,"
                      " sequence, status, created_at, message_id) VALUES (?, 'chat', 'c', 'notice', ?, ?, 'x', 1, 0,"
                      " ?, ?, ?)",
                      [("card:0", "send", None, "sent", old, "m1"),
                       ("card-final:0", "edit", "card:0", "pending", old + 1, None),
                       ("other:0", "send", None, "sent", old, "m2"),
                       ("other-edit:0", "edit", "other:0", "sent", old + 1, "m2")])
        assert store.outbox.prune(clock.time() - 7 * DAY, 1000) == 2
        assert store.outbox.message("card:0").message_id == "m1"
        assert {r[0] for r in db.read("SELECT key FROM gateway_outbox")} == {"card:0", "card-final:0"}
        store.outbox.mark_sent(store.outbox.message("card-final:0").id, "m1")
        assert store.outbox.prune(clock.time() - 7 * DAY, 1000) == 2  # its edit settled: both go
    finally:
        store.close()


def test_a_batch_forgets_the_delivery_attempts_of_its_own_rows_only(tmp_path):
    # Before, every batch deleted the attempts of every delegation not running, in one statement over the
    # whole table, whatever the batch's size: the database's lock held for as long, every other writer waiting.
    clock = FakeClock(autojump=False)
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    try:
        db = store.db
        old, recent = clock.time() - 8 * DAY, clock.time() - DAY
        db.write_many("INSERT INTO gateway_delegations (delegation_id, session_key, agent_session_id, origin_turn_id,"
                      " dispatched_at, tasks, status, settled_at) VALUES (?, 'chat|c|', 's', 't', ?, '[]', ?, ?)",
                      [("old-1", old, "delivered", old), ("old-2", old, "suppressed", old + 1),
                       ("recent", recent, "delivered", recent), ("running", old, "running", None)])
        db.write_many("INSERT INTO gateway_delivery_attempts (delegation_id, attempts) VALUES (?, 1)",
                      [(d,) for d in ("old-1", "old-2", "recent", "running")])
        statements: list[str] = []
        db._conn.set_trace_callback(statements.append)

        def attempts() -> set[str]:
            return {r[0] for r in db.read("SELECT delegation_id FROM gateway_delivery_attempts")}

        assert store.delegations.prune(clock.time() - 7 * DAY, 1) == 1
        assert attempts() == {"old-2", "recent", "running"}
        assert store.delegations.prune(clock.time() - 7 * DAY, 1) == 1
        assert store.delegations.prune(clock.time() - 7 * DAY, 1) == 0
        assert attempts() == {"recent", "running"}  # settled within the week: kept with its row, for now
        deletes = [s for s in statements if s.startswith("DELETE FROM gateway_delivery_attempts")]
        assert deletes and all("LIMIT 1" in s for s in deletes)
    finally:
        store.close()
