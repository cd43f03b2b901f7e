"""End to end on Slack: a message Slack sent before its ``channel_id_changed`` (Slack does not order its events),
taken under the channel's new id, and then a restart: the start's catch-up reads the channel's history for each
conversation the gateway has there, under either id, and must not hand a message on twice. The real
`SlackAdapter` over Socket Mode against `FakeSlack`, with the real `Gateway` behind it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_catchup import Limits
from tests.scenarios.test_slack_channel_moves import answered, texts


def echo(request: ModelRequest) -> dict:
    said = [str(m["content"]) for m in request.messages if m["role"] == "user"]
    return {"text": f"answer to {said[-1].split()[-1]}"}


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


async def test_a_restart_after_a_move_answers_nothing_twice(fake: FakeSlack, tmp_path) -> None:
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
    model = ScriptedModel({"parent": echo})
    running: list[tuple[Gateway, SlackAdapter]] = []

    async def start() -> tuple[Gateway, SlackAdapter]:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2, catch_up=Limits(pace=0))
        running.append((await start_gateway(config, [adapter], model=model), adapter))
        return running[-1]

    try:
        gateway, _ = await start()
        first = (await fake.push_mention("G1", "U1", "hello one"))["event"]["ts"]
        assert await answered(fake, gateway, "G1", first, 1) == ["answer to one"]

        await fake.change_channel_id("G1", "C1", event=False)  # its event comes after the next message
        early = (await fake.push_mention("C1", "U1", "hello two"))["event"]["ts"]
        assert await answered(fake, gateway, "C1", early, 1) == ["answer to two"]
        await fake.push_event({"type": "channel_id_changed", "old_channel_id": "G1", "new_channel_id": "C1",
                               "event_ts": early})
        await fake.wait_for(lambda: gateway.store.chat_moves.of("slack") == {"G1": "C1"})
        later = (await fake.push_mention("C1", "U1", "hello three"))["event"]["ts"]  # the gateway's G1 now
        assert await answered(fake, gateway, "C1", later, 1) == ["answer to three"]
        await gateway.stop(grace=0)

        gateway, adapter = await start()  # its catch-up reads G1's and C1's conversations, both on Slack's C1
        await fake.wait_for(lambda: adapter._catch_up_run is not None and adapter._catch_up_run.done(), 10)
        await settled(gateway)
        assert (texts(fake, "C1", early), texts(fake, "C1", later)) == (["answer to two"], ["answer to three"])
    finally:
        for gateway, _ in running:
            await gateway.stop(grace=0)
