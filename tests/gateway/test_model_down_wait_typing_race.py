"""`gateway.turn_runner._Typing.hold` released while the typing request it let be answered is still on the wire:
the next goes once it is answered, not a whole refresh later (on Slack, `idle` deleted the placeholder that request
posted as the wait began: the turn went on without one for up to 24 s)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from gateway.turn_runner import _Typing


class Adapter:
    typing_interval = 30.0  # Slack's: refreshed every 24 s

    def __init__(self) -> None:
        self.calls = 0
        self.wire: asyncio.Future[None] | None = None

    async def typing(self, chat_id: str, thread_id: str | None) -> None:
        self.calls += 1
        if self.calls == 1:
            self.wire = asyncio.get_running_loop().create_future()
            await self.wire


async def test_released_while_its_request_is_on_the_wire_it_types_again_once_that_is_answered():
    adapter = Adapter()
    typing = _Typing(adapter, SimpleNamespace(chat_id="c", thread_id=None, platform="slack"), None)  # type: ignore
    await asyncio.sleep(0)
    assert adapter.calls == 1 and adapter.wire is not None
    assert typing.hold(True)  # the placeholder that request posts is deleted (`idle`)
    typing.hold(False)  # the call goes again before that request was answered
    adapter.wire.set_result(None)
    for _ in range(5):
        await asyncio.sleep(0)
    assert adapter.calls == 2
    await typing.ended(wait=False)


async def test_held_again_or_stopped_before_that_request_is_answered_it_types_no_more():
    for end in ("hold", "stop"):
        adapter = Adapter()
        typing = _Typing(adapter, SimpleNamespace(chat_id="c", thread_id=None, platform="slack"), None)  # type: ignore
        await asyncio.sleep(0)
        typing.hold(True)
        typing.hold(False)
        typing.hold(True) if end == "hold" else typing.stop()
        adapter.wire.set_result(None)
        for _ in range(5):
            await asyncio.sleep(0)
        assert adapter.calls == 1, end
        await typing.ended(wait=False)
