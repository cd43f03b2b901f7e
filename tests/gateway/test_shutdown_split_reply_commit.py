"""A shutdown whose grace runs out while a turn's long reply is split, in a chat that shows typing: the reply is
journaled in the same commit as the turn's end (its message settled). Committed on its own first, a crash right
after sent the reply after the restart and ran the message again: the chat got the answer twice."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3

from agent.models.scripted import ScriptedModel
from gateway.splitting import split_text
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_long_replies import HeldSplit
from tests.gateway.test_shutdown_while_replying import stop_while_splitting

TEXT = "\n\n".join(f"Paragraph {n}: " + "word " * 40 for n in range(10))


def parent(request) -> dict:
    return {"text": TEXT}


def crash_at_the_replys_commit(db, into) -> list[str]:
    """Copy the state directory as a crash would leave it right after the first commit holding the reply."""
    taken: list[str] = []
    commit = db.commit

    def committed_then_copied() -> None:
        commit()
        if taken:
            return
        probe = sqlite3.connect(db.path)
        try:
            if not probe.execute("SELECT 1 FROM gateway_outbox WHERE key LIKE '%:reply:%'").fetchone():
                return
            shutil.copytree(db.path.parent, into, ignore=shutil.ignore_patterns(f"{db.path.name}*"))
            copy = sqlite3.connect(into / db.path.name)
            probe.backup(copy)
            copy.close()
            taken.append("taken")
        finally:
            probe.close()

    db.commit = committed_then_copied
    return taken


async def test_a_crash_right_after_the_reply_split_at_a_shutdown_is_committed_answers_once(tmp_path, gateways):
    config, chat = make_config(tmp_path), HeldSplit()
    assert chat.typing_interval > 0  # its turn has a typing indicator to end
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": parent}))
    crashed = tmp_path / "crashed"
    taken = crash_at_the_replys_commit(gateway.store.db, crashed / "state")
    await chat.say("write a lot", event_id="e1")
    assert await asyncio.to_thread(chat.splitting.wait, 10)
    await stop_while_splitting(gateway, chat)
    assert taken

    chat2 = RecordingAdapter(text_limit=1000)
    model2 = ScriptedModel({"parent": parent})
    gateway2 = await gateways(make_config(crashed), [chat2], model=model2)
    await settled(gateway2)
    assert [m.text for m in chat2.messages] == split_text(TEXT, 1000)
    assert model2.requests == []  # the message was not run again
