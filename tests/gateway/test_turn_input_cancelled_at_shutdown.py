"""A turn whose files' fetching an adapter cancels itself while the gateway stops (its SDK ending the requests it
has under way): the shutdown's doing, not a failure. Counted failed, its card read "Failed", its chat got an
apology, and its message was settled, never answered; it ends as the shutdown ends a turn, counted ``shutdown``,
and runs again after the next start."""

from __future__ import annotations

import asyncio

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.messages import Attachment

FILE = Attachment("document", "r.txt", "text/plain", 5, "f1")


class Outcomes:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def turn_ended(self, session, item, running, result, outcome, seconds) -> None:
        self.seen.append(outcome)


class Downloads(RecordingAdapter):
    max_attachment_bytes = 1000

    def __init__(self) -> None:
        super().__init__()
        self.under_way: asyncio.Future[bytes] | None = None
        self.began = asyncio.Event()

    async def download(self, attachment: Attachment) -> bytes:
        if self.under_way is None:  # the first start's: held until the stop
            self.under_way = asyncio.get_running_loop().create_future()
            self.began.set()
            return await self.under_way
        return b"hello"


class StopCancels(Downloads):
    async def stop(self) -> None:
        """The adapter's own stop ends the download under way (its SDK's client closing), and takes its time:
        the gateway's stop, which stops the adapters first, has not yet stopped taking turns."""
        if self.under_way is not None:
            self.under_way.cancel()
        for _ in range(30):
            await asyncio.sleep(0)
        await super().stop()


async def started(tmp_path, chat: Downloads) -> tuple[Gateway, Outcomes]:
    host = AgentHost(make_config(tmp_path), model=ScriptedModel({"parent": [[{"text": "read it"}]]}))
    gateway, outcomes = Gateway(host, [chat]), Outcomes()
    gateway.events.subscribe(outcomes)
    await gateway.start()
    return gateway, outcomes


async def test_a_download_the_adapter_cancels_during_the_stop_ends_the_turn_as_the_shutdown_and_runs_it_again(
        tmp_path) -> None:
    chat = StopCancels()
    gateway, outcomes = await started(tmp_path, chat)
    await chat.say("read this", attachments=[FILE])
    await asyncio.wait_for(chat.began.wait(), 5)
    await gateway.stop(grace=5)
    assert outcomes.seen == ["shutdown"]
    assert chat.texts() == []  # no apology: nothing failed

    again = Downloads()
    again.under_way = asyncio.get_running_loop().create_future()  # this start's download answers at once
    gateway, outcomes = await started(tmp_path, again)
    try:
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
    assert again.texts() == ["read it"]
    assert outcomes.seen == ["done"]
