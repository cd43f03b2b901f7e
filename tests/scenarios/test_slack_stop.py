"""A stop with Slack enabled keeps to `server.shutdown_grace_seconds` while Slack does not answer the
adapter's last calls (`platforms.slack.SlackAdapter.stop_within`), and what those calls had no time for
is done by the next start."""

from __future__ import annotations

import asyncio

from agent import ModelRequest
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter

GRACE = 1.0
SLACK = 1.5
"""Room for the last calls' floor (`platforms.base.LAST_CALLS_FLOOR`) on a loaded 2-core machine."""
DM = "DU1"  # the fake's DM channel with user U1
PLACEHOLDER = "_working…_"


def echo(request: ModelRequest) -> dict:
    return {"text": f"echo: {request.messages[-1]['content']}"}


def adapter_for(fake: FakeSlack) -> SlackAdapter:
    return SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base, ping_interval=0.2)


def bot_texts(fake: FakeSlack) -> list[str]:
    return [m.get("text", "") for m in fake.messages.get((DM, None), []) if m.get("bot_id")]


async def test_a_stop_while_slack_does_not_answer_a_placeholders_deletion_keeps_to_the_grace(tmp_path):
    # The stop's last attempt at deleting a placeholder waited for Slack's answer as long as the Web
    # API client's timeout (30 s), far past the grace; a second placeholder waited as long again.
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}}, display={"progress": "off"})
    async with FakeSlack() as fake:
        # The turn's placeholder outlives its turn: its deletion drew a 429 and waits to be tried again.
        fake.fail_next("chat.delete", status=429, retry_after=30)
        gateway = await start_gateway(config, [adapter_for(fake)], script={"parent": echo})
        try:
            await fake.wait_for(lambda: fake.open_connections)
            await fake.push_dm("U1", "is the build green?")
            await fake.wait_for(lambda: fake.calls_to("chat.delete") and "echo: is the build green?" in bot_texts(fake))
            await settled(gateway)
            deleting = fake.hold("chat.delete")  # the stop's last attempt: Slack does not answer
        finally:
            loop = asyncio.get_running_loop()
            began = loop.time()
            await gateway.stop(grace=GRACE)
            took = loop.time() - began
        assert took < GRACE + SLACK
        assert len(fake.calls_to("chat.delete")) == 2  # tried, and given up
        assert bot_texts(fake) == [PLACEHOLDER, "echo: is the build green?"]

        # Nothing of the chat is left to run or send: only the stop's record of the placeholder it
        # could not delete sends the next start there (`Gateway._clear_left_behind`).
        fake.fail_next("chat.delete", "internal_error")  # what the held call answers, too late: it deletes nothing
        deleting.set()  # the held call takes that failure as it wakes, before the next start calls anything
        gateway = await start_gateway(config, [adapter_for(fake)], script={"parent": echo})
        try:
            await fake.wait_for(lambda: bot_texts(fake) == ["echo: is the build green?"])
        finally:
            await gateway.stop(grace=0)
