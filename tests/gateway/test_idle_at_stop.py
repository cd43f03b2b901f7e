"""A turn's end clears its chat's indicator behind it (`Adapter.idle`: Slack deletes its placeholder); a stop that
comes meanwhile waits for that, within its grace, before it closes the adapter's client: the real SlackAdapter
against the loopback FakeSlack, which holds ``chat.delete`` unanswered for as long as the test says."""

from __future__ import annotations

import asyncio

from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, start_gateway
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter

PLACEHOLDER = "_working…_"
GRACE = 5.0
"""Far more than the deletion needs once Slack answers: the stop does not wait for the grace to end."""
WAIT = 5.0


class Watched(SlackAdapter):
    """Counts its `idle` calls under way, and how many were as its client closed."""

    idling = 0
    idling_at_close: int | None = None

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.stopped = asyncio.Event()
        """Set once the gateway's stop has ended its intake (`stop_within`)."""

    async def idle(self, chat_id: str, thread_id: str | None) -> None:
        self.idling += 1
        try:
            await super().idle(chat_id, thread_id)
        finally:
            self.idling -= 1

    async def stop_within(self, seconds: float) -> None:
        await super().stop_within(seconds)
        self.stopped.set()

    async def close(self) -> None:
        if self.idling_at_close is None:
            self.idling_at_close = self.idling
        await super().close()


async def test_a_placeholder_being_deleted_as_the_stop_begins_is_deleted_before_the_client_closes(tmp_path, caplog):
    # Left to run on past the stop, the deletion met the closed client: the placeholder stayed in the chat
    # until the next start.
    async with FakeSlack() as fake:
        adapter = Watched(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
        config = make_config(tmp_path, platforms={"slack": {"allow_all": True}},
                             server={"shutdown_grace_seconds": GRACE})
        model = ScriptedModel({"parent": [[{"wait": "answer", "text": "the answer"}]]})
        gateway = await start_gateway(config, [adapter], model=model)
        stopping: asyncio.Task[None] | None = None
        held = fake.hold("chat.delete")
        try:
            await fake.push_dm("U1", "hello")
            await fake.wait_for(lambda: PLACEHOLDER in fake.texts("DU1"))
            model.release("answer")
            await fake.wait_for(lambda: "the answer" in fake.texts("DU1"))
            assert fake.calls_to("chat.delete") and PLACEHOLDER in fake.texts("DU1")  # the turn's `idle` deletes
            loop = asyncio.get_running_loop()
            began = loop.time()
            stopping = asyncio.create_task(gateway.stop())
            await asyncio.wait_for(adapter.stopped.wait(), WAIT)  # its own last deletions knew nothing of it
            held.set()
            await asyncio.wait_for(asyncio.shield(stopping), GRACE + WAIT)
            took = loop.time() - began
        finally:
            held.set()
            if stopping is None:
                await gateway.stop(grace=0)
            elif not stopping.done():
                await asyncio.wait({stopping})
        assert adapter.idling_at_close == 0
        assert not [r for r in caplog.records if "chat.delete failed" in r.getMessage()]
        assert [t for t in fake.texts("DU1") if t != "hello"] == ["the answer"]
        assert took < GRACE
