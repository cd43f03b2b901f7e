"""A web chat read back from the inbox and the outbox: what reached the page, edits applied, order."""

from __future__ import annotations

from agent.testing import FakeClock
from platforms.base import Inbound
from tests.gateway.store.conftest import msg


def said(store, clock: FakeClock, key: str, text: str, chat: str = "c1", platform: str = "web") -> None:
    store.inbox.accept(Inbound(platform, chat, None, "web", None, text, f"{key}@{chat}"), None)
    clock.advance(1)


def sent(store, clock: FakeClock, key: str, text: str = "hello", chat: str = "c1", **kw) -> str:
    (row_id,) = store.outbox.add_messages([msg(key, text, platform=kw.pop("platform", "web"), chat_id=chat, **kw)])
    store.outbox.mark_sent(row_id, kw.get("target_key") and store.outbox.message(kw["target_key"]).message_id or key)
    clock.advance(1)
    return key


def test_what_was_said_and_sent_in_order_with_edits_applied_and_deletions_left_out(store, clock) -> None:
    said(store, clock, "k1", "- apples\n- pears")
    sent(store, clock, "t1:notice:0", "⏳ Working", kind="notice")
    sent(store, clock, "t1:notice-edit:0", "✓ Done in 3 s", op="edit", target_key="t1:notice:0")
    sent(store, clock, "t1:interim:0", "thinking aloud", kind="interim")
    sent(store, clock, "t1:del:0", "", op="delete", target_key="t1:interim:0")
    sent(store, clock, "t1:reply:0", "the answer")
    said(store, clock, "k2", "/agents")
    messages = store.chat_history.messages("c1", 50)
    assert [(m["id"], m["role"], m["kind"], m["text"], m["edited"]) for m in messages] == [
        ("user:k1@c1", "user", "user", "- apples\n- pears", False),
        ("t1:notice:0", "assistant", "notice", "✓ Done in 3 s", True),
        ("t1:reply:0", "assistant", "reply", "the answer", False),
        ("user:k2@c1", "user", "user", "/agents", False),
    ]
    assert [m["time"] for m in messages] == sorted(m["time"] for m in messages)


def test_a_sent_file_is_a_message_with_its_caption_marked_as_a_file(store, clock) -> None:
    said(store, clock, "k1", "the numbers please")
    (row_id,) = store.outbox.add_messages([msg("t1:file:0:0", "**Q3**", platform="web", chat_id="c1",
                                               kind="interim", op="file")])
    store.outbox.mark_sent(row_id, "FileIdFromTheAdapter0000")  # the id the web chat's send_file returned
    clock.advance(1)
    sent(store, clock, "t1:reply:0", "done")
    messages = store.chat_history.messages("c1", 50)
    assert [(m["id"], m["kind"], m["text"], m.get("file")) for m in messages] == [
        ("user:k1@c1", "user", "the numbers please", None),
        ("FileIdFromTheAdapter0000", "interim", "**Q3**", True),
        ("t1:reply:0", "reply", "done", None),
    ]


def test_only_what_reached_the_page_of_this_chat_counts(store, clock) -> None:
    said(store, clock, "k1", "hi")
    said(store, clock, "k2", "elsewhere", chat="c2")
    said(store, clock, "k3", "another platform", platform="telegram")
    sent(store, clock, "a:0", "sent")
    store.outbox.add_messages([msg("b:0", "pending", platform="web", chat_id="c1")])
    (failed,) = store.outbox.add_messages([msg("c:0", "failed", platform="web", chat_id="c1")])
    store.outbox.mark_failed(failed, "Forbidden")
    sent(store, clock, "d:0", "other chat", chat="c2")
    assert [m["text"] for m in store.chat_history.messages("c1", 50)] == ["hi", "sent"]
    assert [m["text"] for m in store.chat_history.messages("c2", 50)] == ["elsewhere", "other chat"]
    assert store.chat_history.messages("nobody", 50) == [] and store.chat_history.messages("c1", 0) == []


def test_the_limit_keeps_the_most_recent_messages(store, clock) -> None:
    for i in range(5):
        said(store, clock, f"k{i}", f"question {i}")
        sent(store, clock, f"t{i}:reply:0", f"answer {i}")
    assert [m["text"] for m in store.chat_history.messages("c1", 3)] == ["answer 3", "question 4", "answer 4"]


def test_messages_deleted_since_do_not_take_the_place_of_older_ones(store, clock) -> None:
    # `progress_final: delete` removes each turn's progress cards: counted against the limit, they left the
    # older turns' questions on the page without the answers that had been sent to them.
    for i in range(3):
        said(store, clock, f"k{i}", f"question {i}")
        for n in range(3):
            sent(store, clock, f"t{i}:notice{n}:0", "⏳ Working", kind="notice")
            sent(store, clock, f"t{i}:del{n}:0", "", op="delete", target_key=f"t{i}:notice{n}:0")
        sent(store, clock, f"t{i}:reply:0", f"answer {i}")
        sent(store, clock, f"t{i}:edit:0", f"answer {i}, edited", op="edit", target_key=f"t{i}:reply:0")
    assert [(m["text"], m["edited"]) for m in store.chat_history.messages("c1", 4)] == [
        ("question 1", False), ("answer 1, edited", True), ("question 2", False), ("answer 2, edited", True)]
    assert [m["text"] for m in store.chat_history.messages("c1", 50)] == [
        t for i in range(3) for t in (f"question {i}", f"answer {i}, edited")]


def test_a_chat_is_read_through_its_indexes(store) -> None:
    plans = []
    for sql in ("SELECT event_id FROM gateway_inbox WHERE platform = 'web' AND json_extract(payload, '$.chat_id') = ?"
                " ORDER BY received_at DESC LIMIT 5",
                "SELECT id FROM gateway_outbox WHERE platform = 'web' AND chat_id = ? AND id < 1000"
                " AND status = 'sent' AND op IN ('send', 'file', 'edit', 'delete') ORDER BY id DESC LIMIT 5"):
        plans.append(" ".join(row[-1] for row in store.db.read(f"EXPLAIN QUERY PLAN {sql}", ("c1",))))
    assert "gateway_inbox_web_chat" in plans[0] and "gateway_outbox_chat" in plans[1]
