"""A file the platform refused whose copy then cannot be read (a failing disk, a folder of another owner) is
noted without its name, which the copy holds, but with why it failed: the note said "the gateway's copy of it
is gone", the platform's refusal (too large) lost. A copy unreadable at the send itself keeps that reason. The
real aiogram client against the loopback `FakeTelegram`."""

from __future__ import annotations

from gateway.file_names import file_name
from tests.gateway.test_file_failure_note import (  # noqa: F401 (a fixture)
    KEY,
    WAIT,
    file_then_answer,
    started,
    telegram,
    texts,
)


async def test_a_refused_file_whose_copy_then_cannot_be_read_is_noted_with_why(telegram):  # noqa: F811
    fake, adapter, store, files = telegram
    outbox = await started(adapter, store, files)
    try:
        fake.hold("sendDocument")
        fake.fail_next("sendDocument", 413, description="Request Entity Too Large")
        file_then_answer(outbox, files)
        await fake.wait_for(lambda: fake.calls_to("sendDocument"), timeout=WAIT)
        files.remove(KEY)  # the upload is done: its copy's folder turns into something no folder can be read from
        (files.root / file_name(KEY)).write_bytes(b"in the way")
        fake.release("sendDocument")
        assert await outbox.flush(timeout=WAIT)
        assert texts(fake) == ["(A file could not be sent here: it is larger than this chat takes.)", "the answer"]
        assert store.outbox.message(KEY).status == "failed"
    finally:
        await outbox.close()
