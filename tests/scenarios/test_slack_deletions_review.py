"""A Slack deletion of a waiting message (`gateway.message_edits.MessageEdits.deleted`) at the edges: while the
gateway's stop has begun and the adapter still hands events over, and a deletion Slack sends before its message."""

from __future__ import annotations

import asyncio

from gateway.testing import settled
from tests.scenarios.test_slack_chat import DM, slack_chat  # noqa: F401  (the fixture)
from tests.scenarios.test_slack_edits import acked, gated_echo, waiting


async def test_a_deletion_heard_once_the_stop_began_drops_the_waiting_message(slack_chat):  # noqa: F811
    model = gated_echo()
    chat = await slack_chat(llm=model, display={"busy_input_mode": "queue"})
    fake, gateway = chat.fake, chat.gateway
    await fake.push_dm("U1", "first")
    await model.reached("first")
    pasted = (await fake.push_dm("U1", "my password is hunter2"))["event"]["ts"]
    await fake.wait_for(lambda: waiting(gateway) == 1)
    # The gateway's stop has begun (it takes no new events) and the adapter has not stopped yet: another
    # adapter stopping before it, or the stop's first steps, take a while.
    release = asyncio.Event()
    closing = gateway.dead_letters.close

    async def slow_close() -> None:
        await release.wait()
        await closing()

    gateway.dead_letters.close = slow_close  # type: ignore[method-assign]
    stopping = asyncio.ensure_future(gateway.stop(grace=0))
    try:
        await fake.wait_for(lambda: not gateway._accepting)
        await fake.push_deletion(DM, pasted)
        await acked(fake)  # Slack will not send it again
        # Dropped, not left in the inbox for the next start to replay and answer.
        assert gateway.store.inbox.settled("slack", f"{DM}:{pasted}")
    finally:
        release.set()
        await stopping


async def test_a_deletion_slack_sent_before_its_message_drops_it(slack_chat):  # noqa: F811
    model = gated_echo()
    chat = await slack_chat(llm=model, display={"busy_input_mode": "queue"})
    fake, gateway = chat.fake, chat.gateway
    ts = "1700000000.000100"
    message = {"type": "message", "channel": DM, "channel_type": "im", "user": "U1", "ts": ts,
               "text": "my password is hunter2", "team": fake.team_id, "event_ts": ts}
    # Slack does not order events: the message's own event (its Socket Mode connection had died) comes after.
    await fake.push_event({"type": "message", "subtype": "message_deleted", "channel": DM, "channel_type": "im",
                           "deleted_ts": ts, "hidden": True, "ts": "1700000090.000100", "event_ts": "1700000090.000100",
                           "previous_message": {k: v for k, v in message.items() if k != "channel_type"}})
    await fake.push_event(message)
    await fake.push_dm("U1", "last")
    await fake.wait_for(lambda: any("last" in str(m) for request in model.requests for m in request.messages))
    await settled(gateway)
    assert not any("hunter2" in str(m) for request in model.requests for m in request.messages)
