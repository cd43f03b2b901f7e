"""P1: a long message's ``answer.md`` that the platform refuses for good (too large for a Slack workspace, a
permission): its caption, saying what the file held, is lost with it, so the note in its place says that the rest
of the answer could not be sent, not only that a file could not (`gateway.part_notes.file_note`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.testing import FakeClock
from gateway.long_messages import file_missing_text
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.splitting import split_text
from gateway.store import GatewayStore
from platforms.base import AttachmentTooLarge, BadRequest, DeliveryError, Forbidden, Outbound, OutboundFile, Sent
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.gateway.test_long_messages import TEXT, TakesFiles, sent
from tests.platforms.slack_client import fake_slack, running_slack

fake = fake_slack()
slack = running_slack()


@pytest.fixture
def store(tmp_path) -> AsyncIterator[GatewayStore]:
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    yield store
    store.close()


class RefusesFiles(TakesFiles):
    """A `TakesFiles` whose platform refuses every file with ``error``."""

    def __init__(self, error: DeliveryError) -> None:
        super().__init__()
        self.error = error

    async def send_file(self, message: Outbound, file: OutboundFile) -> Sent:
        raise self.error


@pytest.mark.parametrize(("error", "why"), [
    (Forbidden("missing_scope"), "the platform refused it"),
    (AttachmentTooLarge("file_too_large", size=None, limit=1000), "it is larger than this chat takes"),
], ids=["refused", "too-large"])
async def test_a_refused_answer_md_is_noted_as_the_rest_of_the_answer_not_sent(store, tmp_path, error, why):
    chat, files = RefusesFiles(error), OutboxFiles(tmp_path / "outbox-files")
    await sent(store, chat, files)
    *shown, note = chat.texts()
    assert shown == split_text(TEXT, 100)[:3] and chat.files == []
    assert note == f"The answer is too long for this chat (3.8 KB); the rest of it (about 3.6 KB) could not be sent" \
                   f" here as a file: {why}."


async def test_an_answer_md_whose_copy_is_gone_is_noted_as_the_rest_not_sent(store, tmp_path):
    # The copy holds the size: gone (removed by hand, a restored state dir), the note says what it still can.
    chat, files = RefusesFiles(Forbidden("missing_scope")), OutboxFiles(tmp_path / "outbox-files")
    before = Outbox(store.outbox, {"chat": chat}, clock=FakeClock(), files=files, max_parts=lambda _: 3)
    await before.enqueue_long("chat", "c1", None, TEXT, kind="reply", key="t1:reply", turn_id="t1")
    await before.close()
    files.remove("t1:reply:file:0")
    await sent(store, chat, files)
    assert chat.texts()[-1] == ("The answer is too long for this chat; the rest of it could not be sent here as a"
                                " file: the gateway's copy of it is gone.")


async def test_an_agents_file_refused_keeps_its_own_note(store, tmp_path):
    chat, files = RefusesFiles(BadRequest("not_in_channel")), OutboxFiles(tmp_path / "outbox-files")
    outbox = Outbox(store.outbox, {"chat": chat}, clock=FakeClock(), files=files)
    await outbox.start()
    try:
        files.keep_bytes("t1:file:0:0", "report.csv", b"a,b\n")
        assert outbox.enqueue_file("chat", "c1", None, "the report", key="t1:file:0:0", turn_id="t1")
        assert await outbox.flush(5)
    finally:
        await outbox.close()
    assert chat.texts() == ["(The file `report.csv` could not be sent here: the platform refused it.)"]


async def test_slack_refusing_answer_md_for_the_workspace_says_the_rest_is_missing(fake: FakeSlack,
                                                                                   slack: SlackAdapter, store,
                                                                                   tmp_path):
    # The real slack-sdk against the fake: a workspace whose file size limit is below the answer's.
    fake.fail_next("files.getUploadURLExternal", "file_upload_size_restricted")
    text = "\n\n".join(f"Line {n}: " + "loop " * 900 for n in range(8))  # ~36 KB: 8 of Slack's parts
    await sent(store, slack, OutboxFiles(tmp_path / "outbox-files"), text=text, name="slack", chat_id="C1")
    *shown, note = fake.texts("C1")
    assert len(shown) == 3 and not fake.files
    assert note.startswith("The answer is too long for this chat (36.1 KB); the rest of it (about ")
    assert note.endswith(" KB) could not be sent here as a file: it is larger than this chat takes.")


def test_an_answer_md_that_may_have_gone_out_is_not_denied():
    # An answer of the platform's lost on the way: the file may be in the chat after all (`part_notes.file_text`).
    assert file_missing_text(3_800, ["x" * 200], "the platform kept failing", unsure=True) == (
        "The answer is too long for this chat (3.8 KB); the rest of it (about 3.6 KB) may not have been sent here as"
        " a file: the platform kept failing.")
