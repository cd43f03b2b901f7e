"""A message that splits into more parts than its platform's bound (`gateway.long_messages`): its first parts,
then the whole of it as ``answer.md`` where the platform takes files, else a note saying what was left out. Through
the outbox alone (a `RecordingAdapter` with a small limit, and the real aiogram client against `FakeTelegram`),
and through a gateway's turn."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.config import Config, config_from_mapping
from gateway.long_messages import DEFAULT_MAX_PARTS, max_parts, split_bounded
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.splitting import split_text
from gateway.store import GatewayStore
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import Outbound, OutboundFile, Sent
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink

CHAT = ("chat", "c1", None)
TEXT = "\n\n".join(f"Paragraph {n}: " + "word " * 16 for n in range(40))
"""About 3.8 KB: 40 parts of a 100-character limit."""


class TakesFiles(RecordingAdapter):
    """A `RecordingAdapter` that takes files (`platforms.base.SendsFiles`) of up to ``upload`` bytes."""

    caption_limit = 100

    def __init__(self, upload: int = 10_000_000) -> None:
        super().__init__(text_limit=100)
        self.upload = upload
        self.files: list[tuple[str, str, bytes]] = []
        """(caption, name, bytes) of each file sent."""

    def upload_limit(self, chat_id: str) -> int:
        return self.upload

    async def send_file(self, message: Outbound, file: OutboundFile) -> Sent:
        with open(file.path, "rb") as f:
            self.files.append((message.text, file.name, f.read()))
        return await self.send(message)


@pytest.fixture
def store(tmp_path) -> AsyncIterator[GatewayStore]:
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    yield store
    store.close()


async def sent(store: GatewayStore, adapter: RecordingAdapter, files: OutboxFiles | None = None, *,
               most: int = 3, text: str = TEXT, name: str = "chat", chat_id: str = "c1") -> Outbox:
    outbox = Outbox(store.outbox, {name: adapter}, clock=FakeClock(), files=files, max_parts=lambda _: most)
    await outbox.start()
    await outbox.enqueue_long(name, chat_id, None, text, kind="reply", key="t1:reply", turn_id="t1")
    assert await outbox.flush(5)
    return outbox


async def test_a_huge_reply_is_its_first_parts_then_a_note_where_no_file_can_go(store):
    chat = RecordingAdapter(text_limit=100)
    await sent(store, chat)
    parts = split_text(TEXT, 100)
    *shown, note = chat.texts()
    assert shown == parts[:3]
    assert note == "The answer is too long for this chat (3.8 KB); the rest of it (about 3.6 KB) was left out."


async def test_a_huge_reply_is_its_first_parts_then_the_whole_of_it_as_a_file(store, tmp_path):
    chat, files = TakesFiles(), OutboxFiles(tmp_path / "outbox-files")
    await sent(store, chat, files)
    assert chat.texts()[:3] == split_text(TEXT, 100)[:3]
    assert len(chat.messages) == 4
    assert chat.files == [("The answer is too long for this chat (3.8 KB); the whole of it is in `answer.md`.",
                           "answer.md", TEXT.encode())]
    assert not list(files.root.iterdir())  # the copy went once sent


async def test_a_file_larger_than_the_platform_takes_is_left_out_and_said_so(store, tmp_path):
    chat, files = TakesFiles(upload=1000), OutboxFiles(tmp_path / "outbox-files")
    await sent(store, chat, files)
    assert chat.files == [] and len(chat.messages) == 4
    assert chat.texts()[-1] == ("The answer is too long for this chat (3.8 KB), and too large to send here as a file;"
                                " the rest of it (about 3.6 KB) was left out.")


@pytest.mark.parametrize("most", [40, 0], ids=["at-the-bound", "no-bound"])
async def test_a_reply_within_the_bound_or_with_none_is_sent_whole_as_before(store, tmp_path, most):
    chat = TakesFiles()
    await sent(store, chat, OutboxFiles(tmp_path / "outbox-files"), most=most)
    assert chat.texts() == split_text(TEXT, 100) and chat.files == []


async def test_journaled_once_and_sent_once_across_a_restart(store, tmp_path):
    chat, files = TakesFiles(), OutboxFiles(tmp_path / "outbox-files")
    before = Outbox(store.outbox, {"chat": chat}, clock=FakeClock(), files=files, max_parts=lambda _: 3)
    await before.enqueue_long(*CHAT, TEXT, kind="reply", key="t1:reply", turn_id="t1")  # not started: the process
    await before.close()  # died before anything was sent
    outbox = await sent(store, chat, files)  # the turn run again journals the same reply: nothing new
    assert len(chat.messages) == 4 and len(chat.files) == 1
    outbox.enqueue(*CHAT, TEXT, kind="reply", key="t1:reply", turn_id="t1")  # an owed end paid twice: nothing
    assert await outbox.flush(5)
    assert len(chat.messages) == 4 and not list(files.root.iterdir())


async def test_a_reply_journaled_on_the_loop_is_bounded_too(store):
    # An owed end (`gateway.owed_ends`): a reply the store refused at first is journaled later with `enqueue`.
    chat = RecordingAdapter(text_limit=100)
    outbox = Outbox(store.outbox, {"chat": chat}, clock=FakeClock(), max_parts=lambda _: 3)
    await outbox.start()
    outbox.enqueue(*CHAT, TEXT, kind="reply", key="t1:reply", turn_id="t1")
    assert await outbox.flush(5)
    assert len(chat.messages) == 4 and chat.texts()[-1].startswith("The answer is too long for this chat")


def test_a_text_far_past_the_bound_is_split_only_as_far_as_is_sent():
    measured: list[int] = []

    def measure(text: str) -> int:
        measured.append(len(text))
        return len(text)

    text = TEXT * 300  # about 1.1 MB
    parts = split_bounded(text, 100, measure, 3)
    assert 3 < len(parts) < 40 and parts[:3] == split_text(TEXT, 100)[:3]
    assert sum(measured) < 100_000


async def test_telegram_gets_the_first_parts_then_answer_md_holding_the_whole(tmp_path):
    async with FakeTelegram() as fake:
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
        await adapter.start(Sink())
        store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
        try:
            text = "\n\n".join(f"**Line {n}**: " + "loop " * 400 for n in range(60))  # ~120 KB: 60 parts
            await sent(store, adapter, OutboxFiles(tmp_path / "outbox-files"), text=text, name="telegram",
                       chat_id="42")
            *shown, file = fake.messages["42"]
            assert len(shown) == 3 and shown[0]["text"].startswith("Line 0: loop") and "document" not in shown[-1]
            assert file["document"]["file_name"] == "answer.md" and file["document"]["data"] == text.encode()
            assert file["raw"] == ("The answer is too long for this chat (120.9 KB); the whole of it is in"
                                   " <code>answer.md</code>.")
        finally:
            await adapter.stop()
            store.close()


async def test_a_turns_huge_reply_ends_with_the_note_after_the_default_bound(tmp_path, gateways):
    chat = RecordingAdapter(text_limit=100)
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": [[{"text": TEXT}]]}))
    await chat.say("write a lot")
    await chat.wait_for(lambda: len(chat.messages) > DEFAULT_MAX_PARTS)
    await settled(gateway)
    *shown, note = chat.texts()
    assert shown == split_text(TEXT, 100)[:DEFAULT_MAX_PARTS]
    assert note.startswith("The answer is too long for this chat (3.8 KB)")


def test_the_bound_is_set_in_display_and_per_platform():
    assert Config().display.max_message_parts == DEFAULT_MAX_PARTS
    config = config_from_mapping({"state_dir": "/tmp/state", "display": {
        "max_message_parts": 5, "platforms": {"web": {"max_message_parts": 0}}}}, env={}).config
    assert (max_parts(config, "telegram"), max_parts(config, "web")) == (5, 0)


async def test_a_gateway_bounds_its_messages_as_its_configuration_says(tmp_path, gateways):
    chat = RecordingAdapter(text_limit=100)
    config = make_config(tmp_path, display={"max_message_parts": 2})
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": [[{"text": TEXT}]]}))
    await chat.say("write a lot")
    await chat.wait_for(lambda: len(chat.messages) > 2)
    await settled(gateway)
    *shown, note = chat.texts()
    assert shown == split_text(TEXT, 100)[:2] and note.startswith("The answer is too long for this chat")
