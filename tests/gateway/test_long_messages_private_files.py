"""A message past ``display.max_message_parts`` for a command's user alone, where the adapter uploads a file to that
user alone (``sends_files_privately``: Discord's ephemeral follow-up): it ends in ``answer.md``, journaled private
as its parts are, not in the note that the rest was not sent; on both ways a message is journaled."""

from __future__ import annotations

import pytest

from agent.testing import FakeClock
from gateway.long_messages import in_file_text
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.splitting import split_text
from gateway.store import GatewayStore
from tests.gateway.test_long_messages import TEXT
from tests.gateway.test_long_messages_private import AnswersPrivately


class SendsFilesPrivately(AnswersPrivately):
    """Every answer through a reply token is for the command's user alone, and so is a file it sends, as on
    Discord."""

    sends_files_privately = True


@pytest.mark.parametrize("long", [True, False], ids=["enqueue_long", "enqueue"])
async def test_a_long_answer_for_its_user_alone_ends_in_answer_md_for_them_alone(tmp_path, long):
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    chat, files = SendsFilesPrivately(), OutboxFiles(tmp_path / "outbox-files")
    outbox = Outbox(store.outbox, {"chat": chat}, clock=clock, files=files, max_parts=lambda _: 3)
    await outbox.start()
    try:
        enqueue = outbox.enqueue_long if long else outbox.enqueue
        keys = enqueue("chat", "c1", None, TEXT, kind="command", key="answer", reply_token="token")
        assert (await keys if long else keys) == ["answer:0", "answer:1", "answer:2", "answer:file:0"]
        assert await outbox.flush(5)
    finally:
        await outbox.close()
        store.close()
    assert chat.files == [(in_file_text(len(TEXT.encode())), "answer.md", TEXT.encode())]
    assert chat.texts() == [*split_text(TEXT, 100)[:3], in_file_text(len(TEXT.encode()))]
    assert all(m.outbound.private and m.outbound.reply_token == "token" for m in chat.messages)
