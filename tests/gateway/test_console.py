"""The operator console's API over HTTP: what it shows, what its buttons do, who may use it.
(The page itself is tested in a browser: tests/scenarios/test_console_browser.py.)"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from typing import Any

import aiohttp
import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.console.routes import STOP_REASON
from gateway.console.snapshot import ConsoleView
from gateway.testing import RecordingAdapter, SlowToStop, make_config, settled
from lifecycle import SubagentState
from platforms.base import Forbidden
from platforms.web import STATIC_DIR as WEB_STATIC_DIR
from tests.gateway.observing import PLUGIN_TURN, FailingAdapter, restarted_with_children_on_temporal, served

TOKEN = "console-token-0123456789"
TWO_TASKS = {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": "apples"},
                                                                             {"goal": "pears"}]}}]}
JSON = {"Content-Type": "application/json"}


async def state(base: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.get(f"{base}/console/api/state", headers=headers) as response:
        assert response.status == 200, await response.text()
        return await response.json()


async def post(base: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as http, http.post(f"{base}{path}", data="{}",
                                                          headers={**JSON, **(headers or {})}) as response:
        return response.status, await response.json()


async def waiting_background_pair(tmp_path, gateways) -> tuple[RecordingAdapter, ScriptedModel, Any]:
    """A gateway whose chat c1 delegated "apples" and "pears" in the background: the turn has
    ended ("on it"), both children wait for the model (release them by goal)."""
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[TWO_TASKS, {"text": "on it"}], [{"text": "results are in"}]],
                           "leaf": lambda request: {"wait": request.metadata["goal"], "text": "found"}})
    gateway = await gateways(make_config(tmp_path, delegation={"gateway_mode": "background"}), [chat], model=model)
    await chat.say("compare", chat="c1")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await model.reached("apples")
    await model.reached("pears")
    return chat, model, gateway


async def test_sessions_running_work_with_its_children_and_background_delegations_ran_apart_from_delivered(
        tmp_path, gateways) -> None:
    chat, model, gateway = await waiting_background_pair(tmp_path, gateways)
    async with served(gateway) as server:
        seen = await state(server.url)
        [session] = seen["sessions"]
        assert (session["platform"], session["chat_id"], session["mode"], session["generation"]) == (
            "chat", "c1", "background", 1)
        assert session["in_memory"] and session["last_active"] <= seen["now"]
        [work] = seen["work"]  # the turn has ended; its children still run
        assert (work["chat_id"], work["running"]) == ("c1", False)
        assert [(c["goal"], c["state"], c["live"], c["model"]) for c in work["children"]] == [
            ("apples", "RUNNING", True, "scripted"), ("pears", "RUNNING", True, "scripted")]
        assert all(c["activity"] == "waiting for the model" and c["started_at"] for c in work["children"])
        [delegation] = seen["delegations"]
        assert (delegation["status"], delegation["ran"], delegation["origin_turn_id"]) == (
            "running", 0, work["turn_id"])
        assert [t["state"] for t in delegation["tasks"]] == ["RUNNING", "RUNNING"]
        model.release("apples")
        model.release("pears")
        await settled(gateway)
        seen = await state(server.url)
    assert chat.texts() == ["on it", "results are in"]
    assert seen["work"] == []
    [delegation] = seen["delegations"]
    assert (delegation["status"], delegation["ran"]) == ("delivered", 2)
    assert [t["state"] for t in delegation["tasks"]] == ["SUCCEEDED", "SUCCEEDED"]
    assert [p["name"] for p in seen["platforms"]] == ["chat"]


async def test_stopping_a_child_from_the_console_ends_it_with_its_partial_output_and_the_turn_goes_on(
        tmp_path, gateways) -> None:
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[TWO_TASKS, {"text": "one of them was stopped"}]],
                           "leaf": lambda request: ({"wait": "pears"} if request.metadata["goal"] == "pears"
                                                    else {"text": "apples are red"})})
    gateway = await gateways(make_config(tmp_path, delegation={"gateway_mode": "inline"}), [chat], model=model)
    async with served(gateway) as server:
        await chat.say("compare")
        await model.reached("pears")  # never released: only a stop ends it
        [work] = (await state(server.url))["work"]
        assert work["running"] and work["tool"] == "delegate_task"
        hanging = next(c for c in work["children"] if c["goal"] == "pears")
        assert await post(server.url, f"/console/api/children/{hanging['id']}/stop") == (200, {"ok": True})
        await settled(gateway)
        status, body = await post(server.url, f"/console/api/children/{hanging['id']}/stop")
        assert status == 409 and "not running" in body["error"]
        assert (await post(server.url, "/console/api/children/sa-nobody/stop"))[0] == 409
    assert chat.texts("reply") == ["one of them was stopped"]
    snapshot = (await gateway.host.children.lookup([hanging["id"]]))[hanging["id"]]
    assert (snapshot.state, snapshot.error) == (SubagentState.INTERRUPTED, STOP_REASON)
    told = next(m for m in next(iter(gateway.sessions)).agent.messages if m["role"] == "tool")
    results = json.loads(told["content"])["results"]  # what the parent was told
    assert [(r["status"], r["error"]) for r in results] == [("completed", None), ("interrupted", STOP_REASON)]


async def test_stopping_a_running_turn_from_the_console_stops_its_children_tells_the_chat_and_keeps_its_queue(
        tmp_path, gateways) -> None:
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[TWO_TASKS, {"text": "never said"}], [{"text": "the next one ran"}]],
                           "leaf": lambda request: ({"wait": "pears"} if request.metadata["goal"] == "pears"
                                                    else {"text": "apples are red"})})
    config = make_config(tmp_path, delegation={"gateway_mode": "inline"}, display={"busy_input_mode": "queue"})
    gateway = await gateways(config, [chat], model=model)
    async with served(gateway) as server:
        await chat.say("compare")
        await model.reached("pears")  # never released: only a stop ends it
        await chat.say("and then this")  # queued behind the running turn
        [work] = (await state(server.url))["work"]
        assert work["running"]
        assert await post(server.url, f"/console/api/turns/{work['turn_id']}/stop") == (200, {"ok": True})
        await chat.wait_for(lambda: len(chat.texts("reply")) == 2)
        await settled(gateway)
        status, body = await post(server.url, f"/console/api/turns/{work['turn_id']}/stop")
        assert status == 409 and "not running" in body["error"]
        assert (await post(server.url, "/console/api/turns/turn-nobody/stop"))[0] == 409
        seen = await state(server.url)
    # The chat did not ask for the stop, so it is told; what it queued still runs.
    assert chat.texts("reply") == ["(Stopped from the operator console.)", "the next one ran"]
    pears = next(c for c in work["children"] if c["goal"] == "pears")
    snapshot = (await gateway.host.children.lookup([pears["id"]]))[pears["id"]]
    assert (snapshot.state, snapshot.error) == (SubagentState.INTERRUPTED, STOP_REASON)
    assert seen["work"] == []
    assert gateway.metrics.turns.labels("chat", "message", "stopped")._value.get() == 1


async def test_stopping_an_ended_turn_from_the_console_interrupts_its_background_children_and_they_report(
        tmp_path, gateways) -> None:
    chat, _, gateway = await waiting_background_pair(tmp_path, gateways)
    async with served(gateway) as server:
        [work] = (await state(server.url))["work"]
        assert not work["running"] and len(work["children"]) == 2
        assert await post(server.url, f"/console/api/turns/{work['turn_id']}/stop") == (200, {"ok": True})
        await chat.wait_for(lambda: len(chat.texts()) == 2)
        await settled(gateway)
        seen = await state(server.url)
    assert chat.texts() == ["on it", f"results are in\n\n⚠️ Subagent failed: apples: {STOP_REASON}"
                                     f"\n⚠️ Subagent failed: pears: {STOP_REASON}"]
    [delegation] = seen["delegations"]
    assert delegation["status"] == "delivered"
    assert [(t["state"], t["error"]) for t in delegation["tasks"]] == [("INTERRUPTED", STOP_REASON)] * 2


async def test_children_running_on_temporal_after_a_restart_show_and_stop_though_their_session_is_not_loaded(
        tmp_path, gateways, temporal_server) -> None:
    """After a restart a chat's session is loaded when it speaks, or when something needs it (a
    delegation's delivery): children a plugin launched, which ran on on their workers, are still
    running work in a chat nothing loaded, and the operator can stop them."""
    async with restarted_with_children_on_temporal(tmp_path, gateways, temporal_server, "results are in") as (
            gateway, chat), served(gateway) as server:
        seen = await state(server.url)
        sessions = {s["chat_id"]: s for s in seen["sessions"]}
        assert (sessions["c1"]["in_memory"], sessions["c2"]["in_memory"]) == (True, False)
        delegated, launched = seen["work"]  # the sessions in memory first
        assert (delegated["chat_id"], delegated["running"]) == ("c1", False)
        assert [(c["goal"], c["live"]) for c in delegated["children"]] == [("apples", True), ("pears", True)]
        assert (launched["platform"], launched["chat_id"], launched["session_key"], launched["turn_id"],
                launched["running"]) == ("chat", "c2", sessions["c2"]["key"], PLUGIN_TURN, False)
        assert [(c["goal"], c["live"]) for c in launched["children"]] == [("plums", True), ("figs", True)]
        # Mid-call on the worker: running, not waiting for one
        assert {(c["state"], c["activity"] == "waiting for a worker")
                for c in (*delegated["children"], *launched["children"])} == {("RUNNING", False)}
        plums, figs = launched["children"]
        assert await post(server.url, f"/console/api/children/{plums['id']}/stop") == (200, {"ok": True})
        async with asyncio.timeout(15):
            await gateway.host.children.wait_finished([plums["id"]])
        [launched] = [w for w in (await state(server.url))["work"] if w["chat_id"] == "c2"]  # figs still runs
        assert [(c["goal"], c["live"]) for c in launched["children"]] == [("plums", False), ("figs", True)]
        for work in (delegated, launched):
            assert await post(server.url, f"/console/api/turns/{work['turn_id']}/stop") == (200, {"ok": True})
        async with asyncio.timeout(15):
            await gateway.host.children.wait_finished([figs["id"]])
        await chat.wait_for(lambda: len(chat.texts()) == 1, timeout=15)
        await settled(gateway, timeout=15)
        seen = await state(server.url)
    assert seen["work"] == []
    assert not {s["chat_id"]: s for s in seen["sessions"]}["c2"]["in_memory"]  # nothing loaded it
    ids = [c["id"] for c in (*delegated["children"], plums, figs)]
    found = await gateway.host.children.lookup(ids)
    assert [(found[sid].state, found[sid].error) for sid in ids] == [(SubagentState.INTERRUPTED, STOP_REASON)] * 4
    assert chat.texts() == [f"results are in\n\n⚠️ Subagent failed: apples: {STOP_REASON}"
                            f"\n⚠️ Subagent failed: pears: {STOP_REASON}"]


async def test_a_delivery_turn_stopped_from_the_console_delivers_nothing_and_the_delegation_says_why(
        tmp_path, gateways) -> None:
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[TWO_TASKS, {"text": "on it"}], [{"wait": "deliver", "text": "never said"}]],
                           "leaf": [[{"text": "found"}], [{"text": "found"}]]})
    gateway = await gateways(make_config(tmp_path, delegation={"gateway_mode": "background"}), [chat],
                             model=SlowToStop(model))
    async with served(gateway) as server:
        await chat.say("compare")
        await model.reached("deliver")  # the completion turn waits for the model
        [work] = [w for w in (await state(server.url))["work"] if w["running"]]
        assert work["kind"] == "completion"
        assert await post(server.url, f"/console/api/turns/{work['turn_id']}/stop") == (200, {"ok": True})
        try:  # settled at once, though the turn has not wound down: a crash now would deliver nothing
            await chat.wait_for(lambda: len(chat.texts()) == 2)
            assert gateway.store.delegations.running() == []
        finally:
            model.release("deliver")
        await settled(gateway)
        [delegation] = (await state(server.url))["delegations"]
    assert chat.texts() == ["on it", "(Stopped from the operator console.)"]
    assert (delegation["status"], delegation["reason"]) == ("suppressed", "console")


async def test_a_failed_message_is_sent_again_or_dismissed_and_recent_errors_show_why(tmp_path, gateways) -> None:
    chat = FailingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "first"}],
                                                                               [{"text": "second"}]]})
    async with served(gateway) as server:
        for text in ("one", "two"):
            chat.fail_next(Forbidden("the bot was blocked"))
            await chat.say(text)
            await settled(gateway)
        seen = await state(server.url)
        assert seen["outbox"]["failed"] == 2
        first, second = sorted(seen["outbox"]["failed_messages"], key=lambda m: m["id"])
        assert (first["text"], first["kind"], first["error"]) == ("first", "reply", "Forbidden: the bot was blocked")
        assert any("Forbidden" in e["message"] and e["level"] == "WARNING" for e in seen["errors"])
        assert await post(server.url, f"/console/api/outbox/{first['id']}/retry") == (200, {"ok": True})
        await settled(gateway)
        assert chat.texts() == ["first"]
        assert (await post(server.url, f"/console/api/outbox/{first['id']}/retry"))[0] == 409  # sent now
        assert await post(server.url, f"/console/api/outbox/{second['id']}/dismiss") == (200, {"ok": True})
        seen = await state(server.url)
    assert seen["outbox"]["failed"] == 0 and seen["outbox"]["failed_messages"] == []
    assert gateway.store.outbox.message_by_id(second["id"]).status == "dropped"
    assert chat.texts() == ["first"]


async def test_dead_letters_are_handed_back_as_the_cli_does_or_dismissed(tmp_path, gateways) -> None:
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, inbox={"max_attempts": 1}), [chat], clock=FakeClock(),
                             script={"parent": [[{"text": "answered at last"}]]})
    save = gateway.store.sessions.save

    def refuse(row):
        raise sqlite3.OperationalError("database or disk is full")

    gateway.store.sessions.save = refuse
    async with served(gateway) as server:
        await chat.say("please answer", chat="c1", event_id="ev-1")
        await chat.say("and this", chat="c2", event_id="ev-2")
        await settled(gateway)
        letters = {d["event_id"]: d for d in (await state(server.url))["outbox"]["dead_letters"]}
        assert letters["ev-1"]["text"] == "please answer" and "disk is full" in letters["ev-1"]["error"]
        gateway.store.sessions.save = save
        assert await post(server.url, f"/console/api/dead-letters/{letters['ev-1']['id']}/retry") == (200, {"ok": True})
        await chat.wait_for(lambda: "answered at last" in chat.texts())  # the running gateway took it up
        assert await post(server.url, f"/console/api/dead-letters/{letters['ev-2']['id']}/dismiss") == (
            200, {"ok": True})
        assert await post(server.url, f"/console/api/dead-letters/{letters['ev-2']['id']}/dismiss") == (
            404, {"error": "no such dead letter (retried or dismissed already?)"})  # a dismissed one is forgotten
        seen = await state(server.url)
    assert seen["outbox"]["dead"] == 0
    assert (await chat.say("and this", chat="c2", event_id="ev-2")).duplicate  # dismissed, never re-handled


async def test_an_id_that_names_nothing_is_404_saying_what_is_missing_not_409(tmp_path, gateways) -> None:
    # 409 is for one that exists but cannot be acted on now; an id typed wrong, or of a row since
    # pruned, names nothing. SQLite holds 64-bit integers: a longer id names no row (it was a 500).
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    missing = {"outbox": "no such outbox message", "dead-letters": "no such dead letter"}
    async with served(gateway) as server:
        for kind, what in missing.items():
            for row_id in (424242, 2**63, "abc"):
                for action in ("retry", "dismiss"):
                    status, body = await post(server.url, f"/console/api/{kind}/{row_id}/{action}")
                    assert status == 404 and body["error"].startswith(what), (kind, row_id, action, body)


async def test_the_console_needs_its_token_and_serves_no_other_site(tmp_path, gateways) -> None:
    gateway = await gateways(make_config(tmp_path, server={"console_token": TOKEN}), [RecordingAdapter()])
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with served(gateway) as server, aiohttp.ClientSession() as http:
        async with http.get(f"{server.url}/console") as page:  # the page itself holds nothing
            assert page.status == 200 and "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
        # Its token, connection and stream code is the web chat's file, served here with the web chat off.
        async with http.get(f"{server.url}/console/static/live.js") as script:
            assert script.status == 200 and "javascript" in script.headers["Content-Type"]
            assert await script.text() == (WEB_STATIC_DIR / "live.js").read_text()
        for path in ("/console/api/state", "/console/api/events"):
            async with http.get(f"{server.url}{path}") as response:
                assert response.status == 401 and response.headers["WWW-Authenticate"].startswith("Bearer")
        assert (await post(server.url, "/console/api/children/sa-1/stop"))[0] == 401
        await state(server.url, auth)
        status, body = await post(server.url, "/console/api/children/sa-1/stop",
                                  {**auth, "Origin": "https://evil.example"})
        assert status == 403 and "other sites" in body["error"]
        async with http.post(f"{server.url}/console/api/outbox/1/retry", data="x",
                             headers={**auth, "Content-Type": "text/plain"}) as response:
            assert response.status == 415


async def test_the_console_page_under_its_static_path_may_not_be_framed_either(tmp_path, gateways) -> None:
    # /console/static/index.html is the whole working console (it links its files by bare name):
    # framed by another site on loopback, where no token is asked, its Stop buttons take a visitor's clicks.
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    async with served(gateway) as server, aiohttp.ClientSession() as http:
        for name in ("index.html", "console.js", "console.css", "live.js"):
            async with http.get(f"{server.url}/console/static/{name}") as file:
                assert file.status == 200, name
                assert "frame-ancestors 'none'" in file.headers.get("Content-Security-Policy", ""), name
                assert file.headers.get("X-Content-Type-Options") == "nosniff", name


async def test_a_refused_request_cannot_write_lines_of_its_own_into_the_log(tmp_path, gateways, caplog) -> None:
    # The id in the path is the stranger's: decoded, %0A would start a forged line of the text log.
    gateway = await gateways(make_config(tmp_path, server={"console_token": TOKEN}), [RecordingAdapter()])
    caplog.set_level("INFO", "platforms.web_access")
    forged = "%0A2026-01-01%2000:00:00%20ERROR%20gateway:%20forged"
    async with served(gateway) as server:
        assert (await post(server.url, f"/console/api/children/x{forged}/stop"))[0] == 401
    [line] = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert line == f"console POST /console/api/children/x{forged}/stop refused: missing or wrong token"


async def test_without_a_token_the_console_answers_only_on_a_loopback_host_and_can_be_off(tmp_path, gateways) -> None:
    gateway = await gateways(make_config(tmp_path / "on"), [RecordingAdapter()])
    async with served(gateway) as server:
        await state(server.url)
        status, body = await post(server.url, "/console/api/outbox/1/retry", {"Host": "rebound.example"})
        assert status == 403 and "server.console_token" in body["error"]
    off = await gateways(make_config(tmp_path / "off", server={"console": False}), [RecordingAdapter()])
    async with served(off) as server, aiohttp.ClientSession() as http:
        async with http.get(f"{server.url}/console") as response:
            assert response.status == 404


@pytest.mark.parametrize("forwarded", [
    {"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Host": "bot.example.com"},  # Apache's ProxyPass
    {"X-Real-IP": "203.0.113.7"},  # nginx's proxy_pass with its usual header
    {"Forwarded": 'for="[2001:db8::7]:4711";proto=https'},
], ids=["x-forwarded", "x-real-ip", "forwarded"])
async def test_without_a_token_a_request_a_proxy_forwarded_from_elsewhere_is_refused(
        tmp_path, gateways, forwarded) -> None:
    # A reverse proxy on this machine (for the Telegram or Slack webhooks) that keeps the upstream
    # Host makes every request look local: what it says about the real client must count.
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    async with served(gateway) as server, aiohttp.ClientSession() as http:
        for path in ("/console/api/state", "/metrics"):
            async with http.get(f"{server.url}{path}", headers=forwarded) as response:
                assert response.status == 403 and "server.console_token" in (await response.json())["error"]
        status, _ = await post(server.url, "/console/api/outbox/1/retry", forwarded)
        assert status == 403
        local = {"X-Forwarded-For": "127.0.0.1", "X-Real-IP": "::1", "Forwarded": "for=127.0.0.1"}
        await state(server.url, local)  # a proxy forwarding a client of this machine is still local


async def test_the_event_stream_sends_the_state_at_once_and_again_when_it_changes(tmp_path, gateways) -> None:
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "hi"}]]})
    async with served(gateway) as server, aiohttp.ClientSession() as http:
        async with http.get(f"{server.url}/console/api/events") as response:
            assert response.headers["Content-Type"] == "text/event-stream"
            first = await next_state(response)
            assert first["sessions"] == []
            await chat.say("hello", chat="c7")
            while not (later := await next_state(response))["sessions"]:
                pass
            assert later["sessions"][0]["chat_id"] == "c7"


async def test_the_event_stream_tells_of_an_event_a_platform_handed_over_that_changed_nothing_else(
        tmp_path, gateways) -> None:
    clock = FakeClock(autojump=False)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "hi"}]]}, clock=clock)
    await chat.say("hello", chat="c7", event_id="ev-1")
    await settled(gateway)
    async with served(gateway) as server, aiohttp.ClientSession() as http:
        async with http.get(f"{server.url}/console/api/events") as response:
            await next_state(response)  # at once
            await next_state(response)  # and the first look of the stream's refresher
            clock.advance(1800)  # half an hour without a word from the platform: the page ticks that by itself
            await chat.say("hello", chat="c7", event_id="ev-1")  # redelivered: a duplicate, dropped
            # The page must learn the platform is alive (it is looked at every second), not keep ticking the hour.
            later = await asyncio.wait_for(next_state(response), timeout=5)
            assert later["platforms"][0]["last_inbound_age"] < 60


async def next_state(response: aiohttp.ClientResponse) -> dict[str, Any]:
    lines: list[str] = []
    while True:
        line = (await response.content.readline()).decode().rstrip("\n")
        if line.startswith(":"):
            continue
        if line:
            lines.append(line)
        elif lines:
            assert lines[0] == "event: state"
            return json.loads(lines[1].removeprefix("data: "))


@pytest.fixture(autouse=True)
def _quiet_expected_errors(caplog):
    caplog.set_level("CRITICAL", logger="gateway.dead_letters")


def pile_up(db, ids: range) -> None:
    """What weeks of a busy gateway leave in the store: a chat seen, a delegation delivered and a
    message sent for each of ``ids``, all settled."""
    db.write_many("INSERT INTO gateway_sessions (key, session_id, generation, mode, created_at, updated_at)"
                  " VALUES (?, ?, 1, 'inline', ?, ?)", ((f"chat|old-{i}|", f"s-old-{i}", i, i) for i in ids))
    db.write_many("INSERT INTO gateway_delegations (delegation_id, session_key, agent_session_id, origin_turn_id,"
                  " dispatched_at, tasks, status, reason, settled_at) VALUES (?, ?, 's', 't', ?, '[]', 'delivered',"
                  " NULL, ?)",
                  ((f"d-old-{i}", f"chat|old-{i}|", i, i) for i in ids))
    db.write_many("INSERT INTO gateway_outbox (key, platform, chat_id, kind, op, text, silent, sequence, status,"
                  " created_at) VALUES (?, 'chat', ?, 'reply', 'send', 'an old answer', 0, 0, 'sent', ?)",
                  ((f"old-{i}:reply", f"old-{i}", 1e12) for i in ids))


async def sqlite_steps(gateway, read) -> int:
    """SQLite virtual-machine steps that ``read`` costs: a measure of the rows it visits that no
    machine's speed changes."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn = gateway.store.db._connection()
    conn.set_progress_handler(count, 1)
    try:
        await read()
    finally:
        conn.set_progress_handler(None, 0)
    return steps


async def test_a_snapshot_and_a_scrape_cost_no_more_after_weeks_of_chats_delegations_and_messages(
        tmp_path, gateways) -> None:
    # The console takes a snapshot up to ten times a second while a page is open, and Prometheus
    # scrapes /metrics, both on the event loop every chat shares: a read that scans every chat
    # ever seen or every message of the week stalls all of them more as the weeks go by.
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat])
    await chat.say("hello")
    await settled(gateway)
    view = ConsoleView(gateway, gateway.recent_errors)

    async def read() -> None:
        await view.snapshot()
        gateway.metrics.exposition()

    pile_up(gateway.store.db, range(1000))
    await gateway.store.durable()
    shown = await view.snapshot()
    assert (len(shown["sessions"]), len(shown["delegations"])) == (50, 30)  # full lists from here on
    weeks = await sqlite_steps(gateway, read)
    pile_up(gateway.store.db, range(1000, 10_000))
    await gateway.store.durable()
    assert await sqlite_steps(gateway, read) < 1.5 * weeks


async def test_a_stranger_repeating_a_message_cannot_push_the_errors_out_of_the_console(tmp_path, gateways) -> None:
    # Each refused message logs a warning. The log folds identical lines (gateway.log_repeats); the
    # console kept every one, so fifty messages from a stranger left none of the errors that mattered.
    chat = FailingAdapter("telegram")
    gateway = await gateways(make_config(tmp_path, platforms={"telegram": {"allowed_users": ["1"]}}), [chat])
    async with served(gateway) as server:
        chat.fail_next(Forbidden("the bot was blocked"))
        await chat.say("hello", user="1")
        await settled(gateway)
        for _ in range(60):
            await chat.say("let me in", chat="c9", user="666")
        await settled(gateway)
        errors = (await state(server.url))["errors"]
    assert any("Forbidden: the bot was blocked" in e["message"] for e in errors)
    # By the refusal's words: a random turn id may hold "666" too.
    assert [e["message"] for e in errors if "user 666" in e["message"]] == ["refused telegram user 666"]
