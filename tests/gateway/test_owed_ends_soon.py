"""Owed turn ends (`gateway.owed_ends`) of idle chats, between retention sweeps: tried again by
themselves, backing off, once the store takes writes again, and paid by a graceful stop, so that a
restart does not run their turns again."""

from __future__ import annotations

from collections import Counter

import aiohttp

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from tests.gateway.test_turn_end_full_disk import (
    answered,
    answers,
    first_ended_on_a_full_disk,
    no_tracebacks,
    stored,
    texts,
)
from tests.polling import until
from tests.scenarios.test_full_disk import disk_full, room_again
from tests.web_client import post_message, web_chats


class Counting:
    """`answers`, counting the parent's calls per message it answers (a request's messages are the
    agent's own list, which grows after the call: they are read at the call)."""

    def __init__(self) -> None:
        self.asked: Counter[str] = Counter()

    def __call__(self, request: ModelRequest) -> dict:
        self.asked[request.messages[-1]["content"]] += 1
        return answers(request)


async def test_an_idle_chats_owed_turn_end_is_recorded_soon_after_there_is_room_not_at_the_next_sweep(
        tmp_path, caplog):
    # Before, the end of "first" waited for the retention sweep, every five minutes: the answer the chat had
    # been given none of went out up to five minutes after the disk had room again.
    counting = Counting()
    model = ScriptedModel({"parent": counting})
    async with web_chats(tmp_path) as start, aiohttp.ClientSession() as http:
        web = await start(agent_model=model)
        gateway = web.gateway
        session = await first_ended_on_a_full_disk(http, web, model)
        room_again(gateway.store.db)
        await until(lambda: not session.owed)  # no sweep, no message from the chat
        await answered(http, web.base, "long answer to first")
        await web.settled()
        assert gateway.store.inbox.settled("web", "key-first-1@c1")
        assert stored(gateway) == ["first"]
        no_tracebacks(caplog)

        await web.restart()  # nothing runs again
        await web.settled()
        assert counting.asked["first"] == 1
        assert await texts(http, web.base) == ["first", "long answer to first"]


async def test_a_stop_records_an_idle_chats_owed_turn_end_so_the_restart_does_not_run_its_turn_again(
        tmp_path, caplog):
    # The disk has room again (freed to restart on) and the gateway is restarted before the owed end was
    # recorded. Before, the stop left it owed: the restart ran "first" again, model, tools and all.
    counting = Counting()
    model = ScriptedModel({"parent": counting})
    async with web_chats(tmp_path) as start, aiohttp.ClientSession() as http:
        web = await start(agent_model=model)
        gateway = web.gateway
        await first_ended_on_a_full_disk(http, web, model)
        room_again(gateway.store.db)
        await web.restart()
        await web.settled()
        assert web.gateway.store.inbox.settled("web", "key-first-1@c1")
        assert stored(web.gateway) == ["first"]
        assert counting.asked["first"] == 1
        assert await texts(http, web.base) == ["first", "long answer to first"]
        no_tracebacks(caplog)


async def test_a_stop_leaves_owed_the_end_before_a_turn_the_shutdown_cut_short(tmp_path, caplog):
    # The chat owes the end of "first" and its next turn, "second", is interrupted by the shutdown: the agent's
    # messages hold "second" half done, so the stop stores no transcript; both run again after the restart.
    model = ScriptedModel({"parent": answers})
    async with web_chats(tmp_path) as start, aiohttp.ClientSession() as http:
        web = await start(agent_model=model, display={"busy_input_mode": "queue"})
        gateway = web.gateway
        assert (await post_message(http, web.base, "c1", "first", key="key-first-1"))[0] == 202
        await model.reached("first")
        assert (await post_message(http, web.base, "c1", "second", key="key-second-1"))[0] == 202
        await disk_full(gateway.store.db)
        model.release("first")
        await model.reached("second")
        room_again(gateway.store.db)
        assert next(iter(gateway.sessions)).owed
        await web.restart()
        model.release("second")
        await answered(http, web.base, "echo: second")
        await web.settled()
        assert stored(web.gateway) == ["first", "second"]
        assert await texts(http, web.base) == ["first", "second", "long answer to first", "echo: second"]
