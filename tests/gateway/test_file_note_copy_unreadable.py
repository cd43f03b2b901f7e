"""A file send whose copy cannot be read (an OSError other than its absence: a folder of another owner, a failing
disk) fails for good with a note in its place, and the chat goes on. The note is journaled with the file's
failure (`gateway.sender.Sender._fail`): raised while it was made, the failure was undone with it at every try,
and the answer queued behind the file never went out. The real aiogram client against the loopback
`FakeTelegram`."""

from __future__ import annotations

from gateway.file_names import file_name
from gateway.outbox_files import OutboxFiles
from gateway.store import GatewayStore
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.gateway.test_file_failure_note import CHAT, CLOCK, KEY, WAIT, started, texts
from tests.platforms.sink import Sink


async def test_a_file_whose_copy_cannot_be_read_is_noted_and_the_answer_goes(tmp_path):
    async with FakeTelegram() as fake:
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
        await adapter.start(Sink())
        store = GatewayStore(tmp_path / "state.db", clock=CLOCK)
        files = OutboxFiles(tmp_path / "outbox-files")
        outbox = await started(adapter, store, files)
        try:
            copy = files.root / file_name(KEY)
            copy.parent.mkdir()
            copy.write_bytes(b"in the way")  # where its folder should be: reading the copy raises NotADirectoryError
            outbox.enqueue_file(*CHAT, "", key=KEY, turn_id="t")
            outbox.enqueue(*CHAT, "the answer", kind="reply", key="t:reply", turn_id="t")
            assert await outbox.flush(timeout=WAIT)
            [note, answer] = texts(fake)
            assert note.startswith("(A file ") and note.endswith(": the gateway's copy of it is gone.)")
            assert answer == "the answer"
            assert store.outbox.message(KEY).status == "failed"
            assert not fake.calls_to("sendDocument")
        finally:
            await outbox.close()
            await adapter.stop()
            store.close()
