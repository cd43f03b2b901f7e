"""``/agents stop ID``, and ``/new`` of the old session's children, answer only once the lifecycle journal has
committed the stop (`HostView.stops_committed`), as ``/stop`` does, and say so when it could not: answered while the
stop was only queued, a process killed right then left the children running in the journal, lost to the restart,
and ``lifecycle.on_restart: resume`` ran the children the user had stopped again."""

from __future__ import annotations

import asyncio

from tests.gateway.test_stop_commit import _stopping_two
from tests.polling import until

NOT_SAVED = "but the stop is not saved yet (the state database cannot be written)"


async def _one_child(chat, gateway) -> str:
    session = next(iter(gateway.sessions))
    return sorted(c.subagent_id for c in gateway.host.children.children(session.session_id))[0]


async def test_agents_stop_answers_only_once_the_stop_is_committed(tmp_path, gateways, monkeypatch):
    chat, gateway, held = await _stopping_two(tmp_path, gateways, monkeypatch)
    child = await _one_child(chat, gateway)
    said = asyncio.ensure_future(chat.say(f"/agents stop {child}"))
    try:
        await until(held.stop_waits, timeout=2)
        assert "command" not in chat.kinds()  # nothing said while a crash would lose the stop
    finally:
        held.release()
    await asyncio.wait_for(said, 5)
    await chat.wait_for(lambda: "command" in chat.kinds())  # the other child hangs on: nothing settles
    [answer] = chat.texts("command")
    assert answer.startswith(f"Stopping {child} (") and NOT_SAVED not in answer


async def test_agents_stop_whose_commit_fails_says_the_stop_is_not_saved_yet(tmp_path, gateways, monkeypatch):
    chat, gateway, _ = await _stopping_two(tmp_path, gateways, monkeypatch, failing=True)
    child = await _one_child(chat, gateway)
    await chat.say(f"/agents stop {child}")
    await chat.wait_for(lambda: "command" in chat.kinds())
    [answer] = chat.texts("command")
    assert answer.startswith(f"Stopping {child} (") and NOT_SAVED in answer
    assert answer.endswith("It ends at its next step, and its partial result still reaches whatever waits for it.")
    session = next(iter(gateway.sessions))
    await until(lambda: child not in {c.subagent_id for c in gateway.host.children.children(session.session_id)})


async def test_new_answers_only_once_the_stop_of_the_old_sessions_children_is_committed(tmp_path, gateways,
                                                                                        monkeypatch):
    chat, gateway, held = await _stopping_two(tmp_path, gateways, monkeypatch)
    said = asyncio.ensure_future(chat.say("/new"))
    try:
        await until(held.stop_waits, timeout=2)
        assert "command" not in chat.kinds()  # "ended 2 subagents" while a crash would lose their stop
    finally:
        held.release()
    await asyncio.wait_for(said, 5)
    await chat.wait_for(lambda: "command" in chat.kinds())
    [answer] = chat.texts("command")
    assert answer.startswith("Started a new session and ended 2 subagents.")


async def test_new_whose_stop_of_the_old_sessions_children_fails_says_it_is_not_saved_yet(tmp_path, gateways,
                                                                                          monkeypatch):
    chat, gateway, _ = await _stopping_two(tmp_path, gateways, monkeypatch, failing=True)
    await chat.say("/new")
    await chat.wait_for(lambda: "command" in chat.kinds())
    [answer] = chat.texts("command")
    assert answer.startswith("Started a new session. Stopping 2 subagents, " + NOT_SAVED), answer
