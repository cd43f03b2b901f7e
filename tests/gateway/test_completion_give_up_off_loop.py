"""Results sent as they are once their completion turn kept failing (`gateway.ledger_failures`) are split, and a text
past its platform's bound kept as ``answer.md``, in a worker thread (`Outbox.enqueue_long`): ten results of
``RESULT_CHARS`` heavy with formatting held every chat a second or more on the loop. A /new meanwhile still keeps
them from the chat, as it did when nothing could come between its check and their journaling."""

from __future__ import annotations

import asyncio

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.ledger_failures import UNDELIVERABLE
from gateway.testing import make_config, settled
from tests.gateway.test_completion_failures import parent
from tests.gateway.test_long_messages import TakesFiles
from tests.gateway.test_long_messages_sync_paths import Held

CONFIG = {"display": {"interim_assistant_messages": True, "max_message_parts": 3}, "inbox": {"max_attempts": 1}}
LONG = "word " * 60


def found(request: ModelRequest) -> dict:
    return {"text": f"found {request.metadata['goal']} {LONG}"}


def break_completion_replies(gateway) -> None:
    """The completion turn's reply (its key's ``:completion``) raises, every time; nothing else does."""
    enqueue_long = gateway.outbox.enqueue_long

    async def failing(*args, **kw):
        if kw["key"].endswith(":completion"):
            raise RuntimeError("a bug met this turn")
        return await enqueue_long(*args, **kw)

    gateway.outbox.enqueue_long = failing


async def given_up(tmp_path, gateways, monkeypatch):
    """A gateway whose completion turn failed, its results' copy held as it is written; and the delegation."""
    copies = Held(monkeypatch)
    chat = TakesFiles()
    model = ScriptedModel({"parent": parent({"text": "never sent"}), "leaf": found})
    gateway = await gateways(make_config(tmp_path, **CONFIG), [chat], model=model)
    break_completion_replies(gateway)
    await chat.say("please delegate")
    assert await asyncio.to_thread(copies.writing.wait, 5)
    [row] = gateway.store.delegations.latest(gateway.sessions.get("chat", "c1", None).session_id, 5)
    return gateway, chat, copies, row


async def test_results_sent_as_they_are_are_written_while_the_loop_serves_other_chats(tmp_path, gateways, monkeypatch):
    # Before, journaled by `enqueue`, their copy was written on the loop: held, nothing could release it.
    gateway, chat, copies, row = await given_up(tmp_path, gateways, monkeypatch)
    assert await asyncio.ensure_future(asyncio.sleep(0, "another chat")) == "another chat"
    assert not gateway.outbox.journaled(f"{row.completion_turn_id}:undelivered:0")
    copies.release.set()
    await chat.wait_for(lambda: len(chat.files) == 1)
    await settled(gateway)
    assert copies.released == [True]
    assert chat.texts()[1].startswith(UNDELIVERABLE[:50]) and chat.files[0][1] == "answer.md"
    assert b"found alpha" in chat.files[0][2] and b"found beta" in chat.files[0][2]
    assert gateway.store.delegations.running() == []


async def test_results_a_new_session_settled_while_they_were_split_are_not_sent(tmp_path, gateways, monkeypatch):
    gateway, chat, copies, row = await given_up(tmp_path, gateways, monkeypatch)
    [giving_up] = gateway.ledger._aside  # `settled` does not wait for it
    await chat.say("/new")
    assert gateway.store.delegations.running() == []
    copies.release.set()
    await asyncio.wait([giving_up])
    await settled(gateway)
    assert not gateway.outbox.journaled(f"{row.completion_turn_id}:undelivered:0")
    assert copies.released == [True]
    assert not any(UNDELIVERABLE[:50] in text for text in chat.texts()) and chat.files == []
