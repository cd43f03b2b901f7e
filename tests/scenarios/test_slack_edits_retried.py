"""Slack sends an event again when it heard no answer in time (``X-Slack-Retry-Num``: a slow answer, a full
disk's refusal), and promises no order: a retry of a user's first edit may come after their second. The turn
answers the message as it reads last (`platforms.slack_edits`), not as it read at the edit sent again."""

from __future__ import annotations

from gateway.testing import settled
from platforms.fakes.slack import FakeSlack
from tests.scenarios.test_slack_chat import DM, PLACEHOLDER, slack_chat  # noqa: F401  (the fixture)
from tests.scenarios.test_slack_edits import gated_echo, waiting


async def test_a_retry_of_an_earlier_edit_does_not_undo_a_later_one(slack_chat):  # noqa: F811
    model = gated_echo()
    chat = await slack_chat(mode="http", llm=model, display={"busy_input_mode": "queue"})
    fake: FakeSlack = chat.fake
    await fake.push_dm("U1", "first")
    await model.reached("first")
    prod = (await fake.push_dm("U1", "deploy to prod"))["event"]["ts"]
    await fake.wait_for(lambda: waiting(chat.gateway) == 1)
    staging = await fake.push_edit(DM, prod, "deploy to staging")
    await fake.push_edit(DM, prod, "deploy to dev")
    assert fake.events_url is not None and fake.signing_secret is not None
    answer = await fake.send_http_event(fake.events_url, staging, fake.signing_secret, retry_num=1)
    assert answer.status == 200
    model.release("first")
    await fake.wait_for(lambda: len([t for t in chat.bot_texts() if t != PLACEHOLDER]) == 2)
    await settled(chat.gateway)
    assert [t for t in chat.bot_texts() if t != PLACEHOLDER] == ["re: first", "re: deploy to dev"]
