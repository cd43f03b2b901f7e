"""A message past ``display.max_message_parts`` for a command's user alone (`Outbound.private`, as the adapter
says: `answers_privately`) ends in a note saying why the rest was not sent, to that user alone, never in
``answer.md``, which a platform shares with the whole chat; on both ways a message is journaled."""

from __future__ import annotations

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.splitting import split_text
from gateway.store import GatewayStore
from tests.gateway.test_long_messages import TEXT, TakesFiles

NOTE = ("The answer is too long for this chat (3.8 KB); the rest of it (about 3.6 KB) was not sent: this answer is"
        " for you alone, and no file can go to you alone here.")


class AnswersPrivately(TakesFiles):
    """Every answer through a reply token is for the command's user alone, as on Slack."""

    def answers_privately(self, reply_token: str) -> bool:
        return True


@pytest.mark.parametrize("long", [True, False], ids=["enqueue_long", "enqueue"])
async def test_a_long_answer_for_its_user_alone_ends_in_a_note_saying_why_not_a_file(tmp_path, long):
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    chat, files = AnswersPrivately(), OutboxFiles(tmp_path / "outbox-files")
    outbox = Outbox(store.outbox, {"chat": chat}, clock=clock, files=files, max_parts=lambda _: 3)
    await outbox.start()
    try:
        enqueue = outbox.enqueue_long if long else outbox.enqueue
        keys = enqueue("chat", "c1", None, TEXT, kind="command", key="answer", reply_token="token")
        assert (await keys if long else keys) == ["answer:0", "answer:1", "answer:2", "answer:cut"]
        assert await outbox.flush(5)
    finally:
        await outbox.close()
        store.close()
    assert chat.files == [] and not (files.root.exists() and any(files.root.iterdir()))
    assert chat.texts() == [*split_text(TEXT, 100)[:3], NOTE]
    assert all(m.outbound.private and m.outbound.reply_token == "token" for m in chat.messages)


async def test_a_long_answer_for_all_still_ends_in_answer_md(tmp_path):
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    chat, files = TakesFiles(), OutboxFiles(tmp_path / "outbox-files")
    outbox = Outbox(store.outbox, {"chat": chat}, clock=clock, files=files, max_parts=lambda _: 3)
    await outbox.start()
    try:
        await outbox.enqueue_long("chat", "c1", None, TEXT, kind="command", key="answer", reply_token="token")
        assert await outbox.flush(5)
    finally:
        await outbox.close()
        store.close()
    assert [name for _, name, _ in chat.files] == ["answer.md"]
