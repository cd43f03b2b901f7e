"""A Slack message its user deletes while it still waits in the adapter (for a mentioned user's name), whose
deletion reaches the gateway while another event of the chat holds the chat's intake (a command that takes its
time: ``/new`` waiting for its children's ``subagent_stop`` hooks). The deletion waits for the chat; the message,
its name read meanwhile, is handed over and waits behind the deletion. Neither may let the message be answered.
The real slack-bolt client inside `SlackAdapter` against the loopback `FakeSlack` over Socket Mode, with the real
`Gateway`."""

from __future__ import annotations

import asyncio

from gateway.store import session_key
from gateway.testing import settled
from tests.scenarios.test_slack_chat import DM, PLACEHOLDER, slack_chat  # noqa: F401  (the fixture)
from tests.scenarios.test_slack_deletions_waiting_elsewhere import deletion_acked, model_read
from tests.scenarios.test_slack_edits import gated_echo, waiting

ALICE = "U0ALICE"


async def test_a_deletion_waiting_for_its_chat_drops_the_message_handed_over_meanwhile(slack_chat):  # noqa: F811
    model = gated_echo()
    chat = await slack_chat(llm=model, display={"busy_input_mode": "queue"})
    fake, gateway = chat.fake, chat.gateway
    fake.add_user(ALICE, "alice")
    key = session_key("slack", DM, None)
    await fake.push_dm("U1", "first")
    await model.reached("first")

    # A command of the chat that takes its time (as /new does while its children's hooks run) holds the chat.
    reached, release = asyncio.Event(), asyncio.Event()
    run = gateway._answers.run

    async def slow(session, command, inbound):
        if command.name == "help":
            reached.set()
            await release.wait()
        return await run(session, command, inbound)

    gateway._answers.run = slow
    names = fake.hold("users.info")
    try:
        await fake.push_slash_command("/help", "U1", DM)
        await asyncio.wait_for(reached.wait(), 5)
        pasted = (await fake.push_dm("U1", f"<@{ALICE}> my password is hunter2"))["event"]["ts"]
        await fake.wait_for(lambda: fake.calls_to("users.info"))  # in the adapter, not handed over yet
        await fake.push_deletion(DM, pasted)
        await fake.wait_for(lambda: gateway._intake._holders.get(key) == 2)  # the deletion waits for the chat
        names.set()
        await fake.wait_for(lambda: gateway._intake._holders.get(key) == 3)  # so does the message, behind it
    finally:
        names.set()
        release.set()
    await deletion_acked(fake)
    await fake.push_dm("U1", "last")
    await fake.wait_for(lambda: waiting(gateway) >= 1)
    model.release("first")
    await fake.wait_for(lambda: "re: last" in chat.bot_texts())
    await settled(gateway)
    assert not model_read(model, "hunter2")
    assert [t for t in chat.bot_texts() if t.startswith("re: ")] == ["re: first", "re: last"]
