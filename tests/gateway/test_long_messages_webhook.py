"""A message too long for a webhook route (`gateway.long_messages`, `platforms.webhook`): its first parts, then
``answer.md``, delivered as a reply's are; but an interim message (``send_message``) never reaches a route, its
``answer.md`` no more than its parts. Through the outbox, the real adapter and a loopback `WebhookReceiver`."""

from __future__ import annotations

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.store import GatewayStore
from platforms.fakes.webhook_receiver import WebhookReceiver
from platforms.webhook import Route, WebhookAdapter

SECRET = "alerts-secret-0123456789"
TEXT = "\n\n".join(f"Paragraph {n}: " + "word " * 2000 for n in range(40))
"""About 400 KB: more than two of a webhook's 100,000-character parts."""


@pytest.fixture
async def outbox(tmp_path):
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    async with WebhookReceiver(SECRET) as receiver:
        adapter = WebhookAdapter({"alerts": Route(SECRET, receiver.url)}, files_dir=tmp_path / "webhook-files")
        outbox = Outbox(store.outbox, {"webhook": adapter}, clock=FakeClock(),
                        files=OutboxFiles(tmp_path / "outbox-files"), max_parts=lambda _: 2)
        await outbox.start()
        try:
            yield outbox, receiver, store
        finally:
            await outbox.close()
            await adapter.stop()
            store.close()


async def test_a_long_reply_is_its_first_parts_then_answer_md(outbox):
    outbox, receiver, _ = outbox
    await outbox.enqueue_long("webhook", "alerts:ops", None, TEXT, kind="reply", key="t1:reply", turn_id="t1")
    assert await outbox.flush(5)
    kinds = [p["kind"] for p in receiver.payloads]
    assert kinds == ["reply", "reply", "file"] and receiver.payloads[-1]["file"]["name"] == "answer.md"


async def test_a_long_interim_message_delivers_nothing_not_even_its_answer_md(outbox):
    outbox, receiver, store = outbox
    await outbox.enqueue_long("webhook", "alerts:ops", None, TEXT, kind="interim", key="t1:message:0", turn_id="t1")
    await outbox.enqueue_long("webhook", "alerts:ops", None, "done", kind="reply", key="t1:reply", turn_id="t1")
    assert await outbox.flush(5)
    assert [(p["kind"], p["text"]) for p in receiver.payloads] == [("reply", "done")]
    # Nor does a read of the turn list it (`gateway.turn_reads` lists a turn's interim parts that are files).
    assert [m["op"] for m in store.outbox.turn_messages("webhook", "t1") if m["kind"] == "interim"] == ["send"] * 3
