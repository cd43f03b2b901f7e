"""RV5: a bounded message sent late gets one late note, ahead of its first part, not a second ahead of answer.md."""

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.store import GatewayStore
from tests.gateway.test_long_messages import TEXT, TakesFiles


async def test_a_late_huge_reply_has_one_late_note_not_another_before_its_file(tmp_path):
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    chat, files = TakesFiles(), OutboxFiles(tmp_path / "outbox-files")
    outbox = Outbox(store.outbox, {"chat": chat}, clock=clock, files=files, max_parts=lambda _: 3, late_after=600)
    try:
        await outbox.enqueue_long("chat", "c1", None, TEXT, kind="reply", key="t1:reply", turn_id="t1")
        clock.advance(900)  # the platform was unreachable for a quarter of an hour
        await outbox.start()
        assert await outbox.flush(5)
        texts = chat.texts()
        assert len(chat.files) == 1
        assert [t for t in texts if t.startswith("⏱ Delivered late")] == texts[:1]
    finally:
        await outbox.close()
        store.close()
