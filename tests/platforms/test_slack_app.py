"""The bolt app of `platforms.slack_app`: authorized by the adapter's start, with no Web API call
of bolt's own before a listener runs, on the real slack-bolt against FakeSlack."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest

from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.test_slack_adapter import COMMANDS, SECRET, Recorder, mounted

REINSTALL = "installation with this app is no longer available"
"""What bolt answers Slack, with a 200, for a request it could not authorize: the event is lost."""


@contextlib.asynccontextmanager
async def started(fake: FakeSlack, sink: Recorder, mode: str) -> AsyncIterator[SlackAdapter]:
    if mode == "socket":
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2)
        await adapter.start(sink, COMMANDS)
        try:
            yield adapter
        finally:
            await adapter.stop()
        return
    adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base)
    async with mounted(adapter) as url:
        fake.events_url, fake.signing_secret = url, SECRET
        await adapter.start(sink, COMMANDS)
        try:
            yield adapter
        finally:
            await adapter.stop()


@pytest.mark.parametrize("mode", ["socket", "http"])
@pytest.mark.parametrize(("error", "status"), [("internal_error", 500), ("ratelimited", 429), ("token_revoked", 200)])
async def test_the_first_message_and_command_after_a_start_reach_the_gateway_whatever_auth_test_would_answer(
        mode: str, error: str, status: int) -> None:
    # bolt called auth.test again at the first event, and on a failure answered Slack 200 telling the
    # user to reinstall the app: the message or command acknowledged, never handed over, never sent again.
    sink = Recorder()
    async with FakeSlack(ack_timeout=2.0) as fake, started(fake, sink, mode):
        fake.fail_next("auth.test", error, status=status, times=2)
        await fake.push_dm("U1", "hello after the start")
        await fake.push_slash_command("/new", "U1", fake.dm_channel("U1"))
        await fake.wait_for(lambda: len(sink.items) == 2)
        assert sorted(i.text for i in sink.items) == ["/new", "hello after the start"]
        assert len(fake.calls_to("auth.test")) == 1  # the start's own
        answered = [*(a.payload for a in fake.acks), *(r.text for r in fake.http_results), *fake.ephemeral]
        assert not [a for a in answered if REINSTALL in str(a)]

