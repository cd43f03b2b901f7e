"""The outbox rows: idempotent keys, turn sequences, state changes, pieces, retention."""

from __future__ import annotations

import sqlite3

from gateway.store import SCHEMA_VERSION, GatewayStore
from tests.gateway.store.conftest import msg


def test_the_parts_of_a_message_are_journaled_once(store):
    parts = [msg("r:0", "one"), msg("r:1", "two")]
    ids = store.outbox.add_new_messages(parts)
    assert ids is not None and len(ids) == 2 and all(ids)
    assert store.outbox.add_new_messages(parts) is None  # journaled before: nothing added
    assert store.outbox.add_new_messages([msg("r:0", "one, said differently")]) is None
    assert [r.text for r in store.outbox.pending_messages()] == ["one", "two"]


def test_add_messages_is_idempotent_per_key(store):
    first = store.outbox.add_messages([msg("k:0"), msg("k:1")])
    assert all(isinstance(i, int) for i in first)
    again = store.outbox.add_messages([msg("k:0", "other"), msg("k:2")])
    assert again[0] is None and again[1] > first[1]
    assert store.outbox.message("k:0").text == "hello"
    assert [r.key for r in store.outbox.pending_messages()] == ["k:0", "k:1", "k:2"]
    store.outbox.add_messages([msg("t:0", thread_id="th"), msg("o:0", chat_id="c2")])
    assert [r.key for r in store.outbox.pending_messages(("telegram", "c1", None))] == ["k:0", "k:1", "k:2"]
    assert [r.key for r in store.outbox.pending_messages(("telegram", "c1", "th"))] == ["t:0"]


def test_turn_sequence_numbers_and_turn_messages(store):
    store.outbox.add_messages([msg("a:0", "one", turn_id="t1"), msg("a:1", "two", turn_id="t1")])
    store.outbox.add_messages([msg("x:0", "other turn", turn_id="t2")])
    store.outbox.add_messages([msg("b:0", "three", turn_id="t1", kind="notice")])
    store.outbox.add_messages([msg("b:0/a", "piece", turn_id="t1", sequence=0)])
    assert [store.outbox.message(k).sequence for k in ("a:0", "a:1", "b:0", "x:0")] == [0, 1, 2, 0]
    rows = store.outbox.turn_messages("telegram", "t1")
    assert [(m["key"], m["sequence"], m["text"]) for m in rows] == [
        ("a:0", 0, "one"), ("b:0/a", 0, "piece"), ("a:1", 1, "two"), ("b:0", 2, "three")]
    assert rows[3]["kind"] == "notice" and rows[0]["status"] == "pending" and rows[0]["chat_id"] == "c1"
    store.outbox.set_op(store.outbox.message("b:0").id, "split")
    assert "b:0" not in [m["key"] for m in store.outbox.turn_messages("telegram", "t1")]
    assert store.outbox.turn_messages("slack", "t1") == []


def test_state_changes(store, clock):
    ids = store.outbox.add_messages([msg("k:0"), msg("k:1"), msg("k:2")])
    store.outbox.record_attempt(ids[0], "NetworkError: boom", clock.now + 3)
    row = store.outbox.message("k:0")
    assert (row.status, row.attempts, row.next_attempt_at, row.last_error) == (
        "pending", 1, clock.now + 3, "NetworkError: boom")
    store.outbox.mark_sent(ids[0], "m1")
    row = store.outbox.message("k:0")
    assert (row.status, row.attempts, row.message_id, row.sent_at, row.next_attempt_at) == (
        "sent", 2, "m1", clock.now, None)
    store.outbox.mark_failed(ids[1], "Forbidden: blocked")
    assert store.outbox.message("k:1").status == "failed"
    assert store.outbox.drop([ids[1], ids[2]]) == [ids[2]]  # only pending rows drop
    assert store.outbox.message("k:2").status == "dropped"
    store.outbox.set_message_id("k:1", "m9")
    assert store.outbox.message("k:1").message_id == "m9"
    assert store.outbox.pending_messages() == []


def test_pieces_are_the_direct_children_of_a_key(store):
    store.outbox.add_messages([msg("k:1"), msg("k:1/a"), msg("k:1/b"), msg("k:1/a/a"), msg("k:10"), msg("k:1x")])
    assert [r.key for r in store.outbox.pieces("k:1")] == ["k:1/a", "k:1/b"]
    assert [r.key for r in store.outbox.pieces("k:1/a")] == ["k:1/a/a"]


def test_text_with_lone_surrogates_is_stored_exactly(store):
    text = "broken \ud83d emoji and fine 😀"
    store.outbox.add_messages([msg("s:0", text, turn_id="t")])
    assert store.outbox.message("s:0").text == text
    assert store.outbox.turn_messages("telegram", "t")[0]["text"] == text


def test_prune_keeps_pending_rows(store, clock):
    ids = store.outbox.add_messages([msg("old:0"), msg("old:1")])
    store.outbox.mark_sent(ids[0], "m1")
    clock.now += 100
    store.outbox.add_messages([msg("new:0")])
    assert store.outbox.prune(older_than=clock.now - 50) == 1
    assert store.outbox.message("old:0") is None and store.outbox.message("old:1") is not None


def test_a_part_keeps_the_message_it_quotes_and_only_its_pieces_first_does(store):
    store.outbox.add_messages([msg("q:0", "answer", reply_to="77"), msg("q:1", "more")])
    assert [store.outbox.message(k).reply_to for k in ("q:0", "q:1")] == ["77", None]


def test_a_schema_5_file_keeps_its_pending_parts_and_learns_to_quote(tmp_path):
    path = tmp_path / "state.db"
    GatewayStore(path).close()
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE gateway_outbox DROP COLUMN reply_to")  # as a build before quoting made it
    db.execute("INSERT INTO gateway_outbox (key, platform, chat_id, kind, op, text, silent, sequence, status,"
               " created_at) VALUES ('old:0', 'telegram', 'c1', 'reply', 'send', 'still here', 0, 0, 'pending', 1.0)")
    db.execute("UPDATE gateway_meta SET value='5' WHERE key='schema_version'")
    db.commit()
    db.close()
    store = GatewayStore(path)
    try:
        [old] = store.outbox.pending_messages()
        assert (old.key, old.text, old.reply_to) == ("old:0", "still here", None)
        store.outbox.add_messages([msg("new:0", reply_to="5")])
        assert store.outbox.message("new:0").reply_to == "5"
        assert store.db.read_one("SELECT value FROM gateway_meta WHERE key='schema_version'")[0] == str(SCHEMA_VERSION)
    finally:
        store.close()


def test_a_part_is_untried_until_marked_and_stays_tried_when_retried(store):
    [row_id] = store.outbox.add_messages([msg("m:0")])
    assert not store.outbox.message("m:0").tried
    store.outbox.mark_tried(row_id)
    store.outbox.mark_failed(row_id, "NetworkError: gave up")
    assert store.outbox.requeue(row_id).tried  # given up on after lost answers, it may be in the chat


def test_a_schema_6_file_counts_every_part_it_holds_as_tried(tmp_path):
    # A build before the mark could not tell a part it never tried from one it died sending.
    path = tmp_path / "state.db"
    GatewayStore(path).close()
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE gateway_outbox DROP COLUMN tried")
    db.execute("INSERT INTO gateway_outbox (key, platform, chat_id, kind, op, text, silent, sequence, status,"
               " created_at) VALUES ('old:0', 'slack', 'C1', 'reply', 'send', 'in flight?', 0, 0, 'pending', 1.0)")
    db.execute("UPDATE gateway_meta SET value='6' WHERE key='schema_version'")
    db.commit()
    db.close()
    store = GatewayStore(path)
    try:
        assert store.outbox.message("old:0").tried
        store.outbox.add_messages([msg("new:0")])
        assert not store.outbox.message("new:0").tried
        assert store.db.read_one("SELECT value FROM gateway_meta WHERE key='schema_version'")[0] == str(SCHEMA_VERSION)
    finally:
        store.close()


def test_a_failed_parts_quote_goes_to_the_next_message_of_its_turn_in_its_chat(store):
    # What the sender's `gateway.quote_passing` builds on: progress messages, other turns and other
    # chats never take it; a part quoting a message already keeps its quote.
    store.outbox.add_messages([msg("t1:file:0:0", turn_id="t1", op="file", reply_to="m-1"),
                               msg("t1:notice:0", turn_id="t1", kind="notice"),
                               msg("t2:reply:0", turn_id="t2"),
                               msg("t1:reply:0", turn_id="t1", chat_id="c2"),
                               msg("t1:reply:0/x", turn_id="t1")])
    failed = store.outbox.message("t1:file:0:0")
    assert store.outbox.quote_next(failed)
    quotes = {key: store.outbox.message(key).reply_to for key in
              ("t1:notice:0", "t2:reply:0", "t1:reply:0", "t1:reply:0/x")}
    assert quotes == {"t1:notice:0": None, "t2:reply:0": None, "t1:reply:0": None, "t1:reply:0/x": "m-1"}
    store.outbox.add_messages([msg("t3:file:0:0", turn_id="t3", op="file", reply_to="m-3"),
                               msg("t3:reply:0", turn_id="t3", reply_to="m-9")])
    assert store.outbox.quote_next(store.outbox.message("t3:file:0:0"))
    assert store.outbox.message("t3:reply:0").reply_to == "m-9"
    assert not store.outbox.quote_next(store.outbox.message("t1:reply:0/x"))  # nothing after it
    store.outbox.mark_sent(store.outbox.message("t1:reply:0/x").id, "42")
    assert store.outbox.sent_quoting("telegram", "t1", "m-1") == ["t1:reply:0/x"]
    assert store.outbox.sent_quoting("telegram", "t1", "m-2") == []


def test_the_kept_files_are_the_pending_and_failed_file_sends_read_through_their_status_indexes(store):
    # Asked at every retention sweep, on the event loop: a read of the week of sent rows cost some 60 ms at 200,000.
    ids = store.outbox.add_messages([msg(f"t:file:{n}", op="file") for n in range(3)] + [msg("t:reply:0")])
    store.outbox.mark_sent(ids[0], "m1")
    store.outbox.mark_failed(ids[1], "BadRequest: too large")
    assert sorted(store.outbox.kept_files()) == ["t:file:1", "t:file:2"]
    statements: list[str] = []
    store.db._conn.set_trace_callback(statements.append)
    try:
        store.outbox.kept_files()
    finally:
        store.db._conn.set_trace_callback(None)
    [read] = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    plan = " | ".join(row[-1] for row in store.db.read(f"EXPLAIN QUERY PLAN {read}"))
    assert "SCAN gateway_outbox USING INDEX gateway_outbox_pending" in plan
    assert "SCAN gateway_outbox USING INDEX gateway_outbox_failed" in plan
    assert "SCAN gateway_outbox |" not in f"{plan} |"
