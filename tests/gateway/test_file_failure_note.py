"""A file the agent sent (`send_file`) that fails for good leaves a short note in its chat, in its place
(`gateway.part_notes.file_note`): the model was told it was queued, and the user waited for it. The real
aiogram client against the loopback `FakeTelegram`, through the gateway and through the outbox alone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from agent.tools.send_file import FileToSend
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.store import GatewayStore
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink

WAIT = 5.0
KEY = "t:file:0:0"
CHAT = ("telegram", "42", None)
CLOCK = FakeClock()
REFUSAL = "Bad Request: wrong file identifier/HTTP URL specified"


def texts(fake: FakeTelegram) -> list[str]:
    return [m.get("text") or m.get("document", {}).get("file_name") for m in fake.messages.get("42", [])]


def note(why: str) -> str:
    # Tried without an answer that says it failed (a 502 may come from a proxy after Telegram took it): it may be
    # in the chat, which the note must not deny.
    failed = "may not have been sent here" if why == "the platform kept failing" else "could not be sent here"
    return f"(The file report.pdf {failed}: {why}.)"


async def test_a_file_telegram_refuses_as_too_large_is_noted_in_its_place_before_the_reply(tmp_path):
    config = make_config(tmp_path, agent={"toolsets": ["file"]}, platforms={"telegram": {"allow_all": True}})
    workspace = Path(config.state_dir) / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "report.pdf").write_bytes(b"%PDF-1.7 the report")
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "send_file", "arguments": {"path": "report.pdf"}}]},
                                       {"text": "here is the report"}]]})
    async with FakeTelegram() as fake:
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
        gateway = await start_gateway(config, [adapter], model=model)
        try:
            await fake.wait_for(lambda: fake.calls_to("getUpdates"))
            fake.fail_next("sendDocument", 413, description="Request Entity Too Large")
            fake.push_message(42, "the report please")
            await fake.wait_for(lambda: len(fake.messages["42"]) == 2, timeout=WAIT)
            await settled(gateway)
            assert texts(fake) == [note("it is larger than this chat takes"), "here is the report"]
            assert fake.messages["42"][0]["raw"] == (
                "(The file <code>report.pdf</code> could not be sent here: it is larger than this chat takes.)")
        finally:
            await gateway.stop(grace=0)


@pytest.fixture
async def telegram(tmp_path) -> AsyncIterator[tuple[FakeTelegram, TelegramAdapter, GatewayStore, OutboxFiles]]:
    async with FakeTelegram() as fake:
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
        await adapter.start(Sink())
        store = GatewayStore(tmp_path / "state.db", clock=CLOCK)
        files = OutboxFiles(tmp_path / "outbox-files")
        (tmp_path / "report.pdf").write_bytes(b"%PDF-1.7 the report")
        try:
            yield fake, adapter, store, files
        finally:
            await adapter.stop()
            store.close()


async def started(adapter: TelegramAdapter, store: GatewayStore, files: OutboxFiles) -> Outbox:
    # The fake clock: the chat's pacing and the backoffs pass at once, and so does a short give-up time.
    outbox = Outbox(store.outbox, {"telegram": adapter}, clock=CLOCK, files=files, give_up_after={"telegram": 0.1})
    await outbox.start()
    return outbox


def file_then_answer(outbox: Outbox, files: OutboxFiles, caption: str = "") -> None:
    """As `send_file` does: the copy kept (after the outbox's start, which sweeps what no send names), then
    the send journaled, and the turn's answer after it."""
    files.keep(KEY, FileToSend(files.root.parent / "report.pdf", "report.pdf", None), 10_000_000, "telegram")
    outbox.enqueue_file(*CHAT, caption, key=KEY, turn_id="t")
    outbox.enqueue(*CHAT, "the answer", kind="reply", key="t:reply", turn_id="t")


@pytest.mark.parametrize("fail, why", [
    (lambda fake: fake.fail_next("sendDocument", 400, description=REFUSAL), "the platform refused it"),
    (lambda fake: fake.fail_next("sendDocument", 400, description="Bad Request: message caption is too long"),
     "its caption is longer than this chat takes"),
    (lambda fake: [fake.fail_next("sendDocument", 502) for _ in range(50)], "the platform kept failing"),
], ids=["refused", "caption", "given-up"])
async def test_a_file_that_fails_for_good_is_noted_once_in_plain_words(telegram, fail, why):
    fake, adapter, store, files = telegram
    outbox = await started(adapter, store, files)
    try:
        fail(fake)
        file_then_answer(outbox, files, "the report")
        assert await outbox.flush(timeout=WAIT)
        assert texts(fake) == [note(why), "the answer"]
        assert REFUSAL not in str(fake.messages["42"])  # the platform's own words stay in the log
        assert store.outbox.message(KEY).status == "failed"
    finally:
        await outbox.close()


async def test_a_file_whose_copy_is_gone_is_noted_without_its_name(telegram):
    fake, adapter, store, files = telegram
    outbox = await started(adapter, store, files)
    try:
        fake.hold("sendDocument")
        file_then_answer(outbox, files)
        await fake.wait_for(lambda: fake.calls_to("sendDocument"), timeout=WAIT)
        fake.fail_next("sendDocument", 502)
        fake.release("sendDocument")
        files.remove(KEY)  # removed by hand while the send was retried
        assert await outbox.flush(timeout=WAIT)
        assert texts(fake) == ["(A file could not be sent here: the gateway's copy of it is gone.)", "the answer"]
    finally:
        await outbox.close()


async def test_a_console_retry_leaves_the_note_as_it_is_and_adds_none(telegram):
    fake, adapter, store, files = telegram
    outbox = await started(adapter, store, files)
    try:
        fake.fail_next("sendDocument", 400, description=REFUSAL)
        file_then_answer(outbox, files)
        assert await outbox.flush(timeout=WAIT)
        fake.fail_next("sendDocument", 400, description=REFUSAL)
        assert outbox.retry(store.outbox.message(KEY).id)  # refused again: no second note
        assert await outbox.flush(timeout=WAIT)
        assert outbox.retry(store.outbox.message(KEY).id)  # taken this time: the note stays
        assert await outbox.flush(timeout=WAIT)
        assert texts(fake) == [note("the platform refused it"), "the answer", "report.pdf"]
    finally:
        await outbox.close()


async def test_a_note_the_process_died_sending_goes_once_at_the_next_start(telegram):
    fake, adapter, store, files = telegram
    first = await started(adapter, store, files)
    fake.fail_next("sendDocument", 400, description=REFUSAL)
    fake.hang_next("sendMessage")  # the note's send: the process dies before Telegram answers
    file_then_answer(first, files)
    await fake.wait_for(lambda: fake.calls_to("sendMessage"), timeout=WAIT)
    await first.close()
    assert texts(fake) == []
    again = await started(adapter, store, files)
    try:
        assert await again.flush(timeout=WAIT)
        # In the file's place still, ahead of what was queued behind the file (journaled before the note).
        assert texts(fake) == [note("the platform refused it"), "the answer"]
        assert len(fake.calls_to("sendDocument")) == 1  # the file failed for good: not tried again
    finally:
        await again.close()


def test_a_name_is_quoted_as_code_whatever_backticks_it_holds():
    from gateway.part_notes import file_text  # here: the other tests also run against a build without it

    assert file_text("__init__.py", "why") == "(The file `__init__.py` could not be sent here: why.)"
    assert file_text("a`b.txt", "why") == "(The file ``a`b.txt`` could not be sent here: why.)"
    assert file_text("`x`", "why") == "(The file `` `x` `` could not be sent here: why.)"
