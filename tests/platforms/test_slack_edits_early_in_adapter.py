"""An edit that comes while its message is still in the adapter (waiting for its mentions' names, or its files'
details), not yet handed to the gateway: the gateway has no such message, takes no such edit, and the message,
handed over a moment later, must still be answered as edited (`platforms.slack_edits.LatestEdits.as_edited`).
The real slack-bolt client over Socket Mode against `FakeSlack`."""

from __future__ import annotations

from platforms.fakes.slack import FakeSlack
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack, slack_on

fake = fake_slack()

ALICE = "U0ALICE"
DM = "DU1"


class Edits:
    """The gateway's `MessageEdits.edited`: takes an edit only of a message the sink has been handed."""

    def __init__(self, sink: Sink) -> None:
        self.sink, self.texts = sink, []

    async def __call__(self, platform: str, chat_id: str, thread_id: str | None, message_id: str, text: str) -> bool:
        self.texts.append(text)
        return any(i.message_id == message_id for i in self.sink.inbound)


async def test_an_edit_that_comes_while_its_message_waits_for_names_is_what_is_handed_over(fake: FakeSlack) -> None:
    fake.add_user(ALICE, "alice")
    slack, sink = slack_on(fake), Sink()
    edits = Edits(sink)
    slack.bind_edits(edits)
    names = fake.hold("users.info")
    await slack.start(sink)
    try:
        ts = (await fake.push_dm("U1", f"ask <@{ALICE}> to deploy to prod"))["event"]["ts"]
        await fake.wait_for(lambda: fake.calls_to("users.info"))  # the message waits for her name
        await fake.push_edit(DM, ts, "deploy to staging")
        await fake.wait_for(lambda: edits.texts)
        names.set()
        await fake.wait_for(lambda: sink.inbound)
    finally:
        names.set()
        await slack.stop()
    assert [i.text for i in sink.inbound] == ["deploy to staging"]
