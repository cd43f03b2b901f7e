"""A note about a message's files (one too large, a download that failed, a platform that takes none) that the state
database refuses to journal (a full disk, another process's write lock). Beside an answer of the model's, it is left
out and the turn goes on to that answer; where it is the whole answer (nothing else for the model), it is kept as a
reply is and goes out once the store takes it. Before, the refusal crashed the turn: its chat got "Sorry — something
went wrong" in place of the answer, and its message was settled so."""

from __future__ import annotations

import asyncio
import sqlite3

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.idle_owed_ends import PAY_AGAIN_FIRST
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import AttachmentTooLarge
from platforms.messages import Attachment
from tests.gateway.test_command_answer_full_disk import no_room, room
from tests.gateway.test_write_lock_held_mid_turn import BUSY_TIMEOUT

REPORT = Attachment("document", "report.pdf", "application/pdf", None, "f1")
NOTE_KEYS = "NEW.key LIKE '%:attachments:%'"


class TooLarge(RecordingAdapter):
    """Every file a user sends is over the platform's limit."""

    max_attachment_bytes = 1000

    async def download(self, attachment: Attachment) -> bytes:
        raise AttachmentTooLarge("too large", size=5000, limit=self.max_attachment_bytes)


class GatedTooLarge(TooLarge):
    """`TooLarge`, refusing each file once the test sets ``refuse``."""

    def __init__(self) -> None:
        super().__init__()
        self.downloading, self.refuse = asyncio.Event(), asyncio.Event()

    async def download(self, attachment: Attachment) -> bytes:
        self.downloading.set()
        await self.refuse.wait()
        return await super().download(attachment)


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "gateway.turn_runner"]


async def test_a_note_beside_the_answer_the_full_disk_refuses_is_left_out(tmp_path, gateways, caplog):
    model = ScriptedModel({"parent": [[{"text": "the answer"}]]})
    chat = TooLarge()
    gateway = await gateways(make_config(tmp_path), [chat], model=model)
    no_room(gateway.store.db, NOTE_KEYS, "gateway_outbox")
    await chat.say("read this", event_id="e1", attachments=[REPORT], private=False, message_id="m1")
    await chat.wait_for(lambda: chat.texts("reply"))
    await settled(gateway)
    room(gateway.store.db)
    assert chat.texts() == ["the answer"]
    assert chat.messages[0].outbound.reply_to == "m1"  # the quote the note took went to the answer
    assert gateway.store.inbox.settled("chat", "e1")
    [said] = warnings(caplog)
    assert "not recorded: the note about its files" in said and "the rest of it is recorded" in said


async def test_a_note_that_is_the_whole_answer_the_full_disk_refuses_goes_out_once_there_is_room(
        tmp_path, gateways, caplog):
    model = ScriptedModel({"parent": [[{"text": "unused"}]]})
    chat, clock = TooLarge(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [chat], model=model, clock=clock)
    no_room(gateway.store.db, NOTE_KEYS, "gateway_outbox")
    await chat.say("", event_id="e1", attachments=[REPORT])
    await clock.until_sleeping(lasting=PAY_AGAIN_FIRST)  # the turn is over, its end owed
    assert chat.texts() == [] and not gateway.store.inbox.settled("chat", "e1")
    [said] = warnings(caplog)
    assert "not recorded: the note about its files" in said and "stays unsettled" in said
    room(gateway.store.db)
    clock.advance(PAY_AGAIN_FIRST)
    await chat.wait_for(lambda: chat.texts())
    await settled(gateway)
    [note] = chat.texts()
    assert note.endswith("please send a smaller file.")  # the note, not an apology
    assert gateway.store.inbox.settled("chat", "e1")


async def test_a_note_that_is_the_whole_answer_while_the_lock_is_held_goes_out_once_it_is_free(tmp_path, gateways):
    model = ScriptedModel({"parent": [[{"text": "unused"}]]})
    chat, clock = GatedTooLarge(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [chat], model=model, clock=clock)
    db = gateway.store.db
    db.busy_timeout = BUSY_TIMEOUT
    db.read(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
    await chat.say("", event_id="e1", attachments=[REPORT])
    await chat.downloading.wait()  # its event is marked begun: the lock is free to take
    await db.durable()
    other = sqlite3.connect(db.path, isolation_level=None, timeout=0)
    try:
        other.execute("BEGIN IMMEDIATE")
        chat.refuse.set()
        await clock.until_sleeping(lasting=PAY_AGAIN_FIRST)  # the turn is over, its end owed
        assert chat.texts() == [] and not gateway.store.inbox.settled("chat", "e1")
        other.execute("ROLLBACK")
    finally:
        other.close()
    clock.advance(PAY_AGAIN_FIRST)
    await chat.wait_for(lambda: chat.texts())
    await settled(gateway)
    [note] = chat.texts()
    assert note.endswith("please send a smaller file.")  # the note, not an apology
    assert gateway.store.inbox.settled("chat", "e1")
