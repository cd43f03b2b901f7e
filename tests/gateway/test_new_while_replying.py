"""A ``/new`` that comes while the running turn's reply is being journaled (split in a worker thread):
the reply belongs to the old session, and goes to the chat before the new session's acknowledgement.
Journaled first, the acknowledgement read "Started a new session." and the old session's answer followed
it, as if the new session had given it."""

from __future__ import annotations

import asyncio

from agent.models.scripted import ScriptedModel
from gateway.splitting import split_text
from gateway.testing import make_config, settled
from tests.gateway.test_long_replies import HeldSplit
from tests.polling import until

TEXT = "\n\n".join(f"Paragraph {n}: " + "word " * 40 for n in range(10))


def parent(request) -> dict:
    said = str(request.messages[-1]["content"])
    return {"text": TEXT if said == "write a lot" else f"re: {said}"}


async def test_new_while_the_reply_is_split_comes_after_the_reply(tmp_path, gateways):
    chat = HeldSplit()
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": parent}))
    await chat.say("write a lot")
    assert await asyncio.to_thread(chat.splitting.wait, 10)
    session = next(iter(gateway.sessions))
    old = session.session_id
    new = asyncio.ensure_future(chat.say("/new plan the trip"))
    await until(lambda: session.session_id != old)  # the new session has begun; its acknowledgement waits
    chat.release.set()
    await new
    await chat.wait_for(lambda: "re: plan the trip" in chat.texts())
    await settled(gateway)
    [ack] = chat.texts("command")
    assert ack.startswith("Started a new session.")
    assert chat.texts() == [*split_text(TEXT, 1000), ack, "re: plan the trip"]
    # The new session knows nothing of the old one's answer.
    assert not any(TEXT in str(m.get("content")) for m in session.agent.messages)
    assert not any(TEXT in str(m.get("content")) for m in gateway.store.sessions.load(session.key).transcript)
