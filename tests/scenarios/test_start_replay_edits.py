"""A Slack message sent while the gateway was down waits, at the next start, behind the older message of its
chat that the start replays (`gateway.chat_intake.Replays`); its user edits it meanwhile: its turn answers it as
edited, as it does a message waiting in its session's queue (`gateway.message_edits`). The real slack-bolt client
inside `SlackAdapter` against the loopback `FakeSlack` over Socket Mode; a later platform's start held until the
test lets it go on (`HeldStart`)."""

from __future__ import annotations

import asyncio
import re

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import RecordingAdapter, make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter

DM = "DU1"


class HeldStart(RecordingAdapter):
    """A platform whose start waits until ``go`` is set: the platforms before it have started, the start has
    not replayed anything yet."""

    def __init__(self) -> None:
        super().__init__()
        self.go = asyncio.Event()

    async def start(self, sink, commands=()) -> None:
        await super().start(sink, commands)
        await self.go.wait()


def echo(gated: bool) -> ScriptedModel:
    """Echoes each message without its sender; ``gated``: the one saying "first" waits at the gate ``first``."""
    def parent(request: ModelRequest) -> dict:
        text = re.sub(r"^\[user U\w+\] ", "", str(request.messages[-1]["content"]))
        return {"wait": "first", "text": f"re: {text}"} if gated and text == "first" else {"text": f"re: {text}"}
    return ScriptedModel({"parent": parent})


class EditsSeen(SlackAdapter):
    """Notes when it hands the gateway an edit (``edit_handed``)."""

    def __init__(self, fake: FakeSlack) -> None:
        super().__init__(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base, ping_interval=0.2,
                         sink_timeout=0.1)  # a message waiting behind the replay is acked meanwhile
        self.edit_handed = asyncio.Event()

    def bind_edits(self, edited) -> None:
        async def handing(*args):
            self.edit_handed.set()  # the gateway decides at once what the edit changes, or waits
            return await edited(*args)
        super().bind_edits(handing)


async def test_a_message_waiting_behind_the_replay_is_answered_as_its_user_edited_it(tmp_path):
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
    async with FakeSlack() as fake:
        model = echo(gated=True)
        gateway = await start_gateway(config, [EditsSeen(fake)], model=model)
        try:
            await fake.push_dm("U1", "first")
            await model.reached("first")
        finally:
            await gateway.stop(grace=0)  # "first" was in its turn: the next start replays it

        held, slack = HeldStart(), EditsSeen(fake)
        gateway = Gateway(AgentHost(config, model=echo(gated=False)), [slack, held])
        starting = asyncio.ensure_future(gateway.start())
        try:
            try:
                # Slack has started, and read what came while it was down (nothing; a message its catch-up read
                # would be read as it is now, edited): the start has not replayed "first" yet.
                await fake.wait_for(lambda: slack._catch_up_run is not None)
                await asyncio.wait_for(asyncio.shield(slack._catch_up_run), 5)
                second = (await fake.push_dm("U1", "deploy to prod"))["event"]["ts"]
                await fake.wait_for(lambda: gateway.store.inbox.arrival("slack", f"{DM}:{second}") is not None)
                await fake.push_edit(DM, second, "deploy to staging")
                await asyncio.wait_for(slack.edit_handed.wait(), 5)
            finally:
                held.go.set()
            await asyncio.wait_for(starting, 10)

            def answers() -> list[str]:
                return [text for text in fake.texts(DM) if text.startswith("re: ")]
            await fake.wait_for(lambda: len(answers()) == 2)
            await settled(gateway)
        finally:
            await gateway.stop(grace=0)
    assert answers() == ["re: first", "re: deploy to staging"]
