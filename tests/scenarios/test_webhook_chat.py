"""End to end over HTTP: signed webhook turns in, replies out to a loopback receiver."""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import pytest

from gateway.app import Gateway
from gateway.config import config_from_mapping
from gateway.dead_letters import APOLOGY
from gateway.host import AgentHost
from gateway.platform_factory import build_adapters
from gateway.server import Server
from gateway.testing import settled
from platforms.fakes.webhook_receiver import WebhookReceiver, signed_get, signed_post
from tests.gateway.test_dead_letters import break_new_sessions

SECRET = "s3cret-for-tests"
PULL_SECRET = "pull-s3cret-for-tests"
"""A pull route's own: two routes may not share a secret, and the receiver checks deliveries with `SECRET`."""
LIST = "Compare these:\n- apples\n- pears"


@pytest.fixture
async def receiver():
    async with WebhookReceiver(SECRET) as r:
        yield r


@pytest.fixture
async def serve(tmp_path):
    running = []

    async def start(routes, **sections):
        raw = {"state_dir": str(tmp_path / "state"), "server": {"port": 0},
               "model": {"demo": {"child_steps": 1, "step_seconds": 0}},
               "platforms": {"webhook": {"enabled": True, "routes": routes}}, **sections}
        config = config_from_mapping(raw).config
        gateway = Gateway(AgentHost(config), build_adapters(config))
        server = Server(gateway, "127.0.0.1", 0)
        await gateway.start()
        await server.start()
        running.append((gateway, server))
        start.gateway = gateway  # the latest, for a test that breaks something of it
        return server.url

    async def quiet() -> None:
        """Nothing more will be delivered: every gateway has settled."""
        for gateway, _ in running:
            await settled(gateway)

    start.quiet = quiet
    yield start
    for gateway, server in running:
        await server.stop()
        await gateway.stop(grace=0)


async def test_a_signed_turn_is_accepted_and_answered_at_the_receiver(serve, receiver):
    base = await serve({"hook": {"secret": SECRET, "deliver_url": receiver.url}})
    reply = await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "hello", "chat_id": "42"})
    assert reply.status == 202
    accepted = reply.json()
    assert accepted["turn_id"] and accepted["session"]
    await receiver.wait_for(lambda: receiver.unique)
    (delivery,) = receiver.unique.values()
    body = delivery.json
    assert (body["route"], body["chat_id"], body["turn_id"], body["kind"], body["sequence"]) == (
        "hook", "42", accepted["turn_id"], "reply", 0)
    assert body["text"].startswith("[demo]") and delivery.reason is None


@pytest.mark.parametrize(("mode", "kinds"), [("inline", ["reply"]), ("auto", ["reply", "completion"])])
async def test_one_message_inline_two_in_background_counted_at_the_receiver(serve, receiver, mode, kinds):
    base = await serve({"hook": {"secret": SECRET, "deliver_url": receiver.url}},
                       delegation={"gateway_mode": mode})
    assert (await signed_post(f"{base}/webhooks/hook", SECRET, {"text": LIST})).status == 202
    await receiver.wait_for(lambda: len(receiver.unique) >= len(kinds))
    await serve.quiet()
    assert [d.json["kind"] for d in receiver.unique.values()] == kinds
    final = list(receiver.unique.values())[-1].json["text"]
    assert "apples: completed" in final and "pears: completed" in final


async def test_a_replayed_request_is_the_duplicate_it_is(serve, receiver):
    base = await serve({"hook": {"secret": SECRET, "deliver_url": receiver.url}})
    body = json.dumps({"text": "only once"}).encode()
    ts = str(int(time.time()))
    first = await signed_post(f"{base}/webhooks/hook", SECRET, body, timestamp=ts)
    second = await signed_post(f"{base}/webhooks/hook", SECRET, body, timestamp=ts)
    assert first.status == second.status == 202
    assert second.json()["duplicate"] is True and second.json()["turn_id"] == first.json()["turn_id"]
    await receiver.wait_for(lambda: receiver.unique)
    await serve.quiet()
    assert len(receiver.deliveries) == 1


async def test_a_delivery_sent_back_to_its_route_is_refused_not_taken_for_the_callers_message(serve, receiver):
    # One secret signs both ways, so a delivery is a validly signed request to its own route: anyone
    # who saw it (a plain-http deliver_url, the receiver's logs) could send it back within 300 s and
    # the agent's reply started a turn as the caller's message, answered and delivered in its turn.
    base = await serve({"hook": {"secret": SECRET, "deliver_url": receiver.url}})
    assert (await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "hello", "chat_id": "42"})).status == 202
    await receiver.wait_for(lambda: receiver.unique)
    await serve.quiet()
    (delivery,) = receiver.unique.values()
    sent_back = await signed_post(f"{base}/webhooks/hook", SECRET, delivery.body,
                                  timestamp=delivery.headers["X-Switchboard-Timestamp"],
                                  signature=delivery.headers["X-Switchboard-Signature"])
    assert (sent_back.status, sent_back.json()) == (401, {"error": "a delivery of this route sent back, not a "
                                                                   "request to it"})
    await serve.quiet()
    assert len(receiver.deliveries) == 1


async def test_bad_signatures_and_sizes_are_refused_before_anything_runs(serve, receiver):
    base = await serve({"hook": {"secret": SECRET, "deliver_url": receiver.url}})
    assert (await signed_post(f"{base}/webhooks/hook", "wrong-secret", {"text": "x"})).status == 401
    stale = str(int(time.time()) - 301)
    assert (await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "x"}, timestamp=stale)).status == 401
    assert (await signed_post(f"{base}/webhooks/nope", SECRET, {"text": "x"})).status == 404
    assert (await signed_post(f"{base}/webhooks/hook", SECRET, {"no": "text"})).status == 400
    big = json.dumps({"text": "x" * (1024 * 1024)}).encode()
    assert (await signed_post(f"{base}/webhooks/hook", SECRET, big)).status == 413
    await serve.quiet()
    assert receiver.deliveries == []


async def test_failed_deliveries_are_retried_from_the_outbox(serve, receiver):
    receiver.fail_next(2, 500)
    base = await serve({"hook": {"secret": SECRET, "deliver_url": receiver.url}})
    await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "hello"})
    await receiver.wait_for(lambda: receiver.unique, timeout=10)
    assert [d.status for d in receiver.deliveries] == [500, 500, 200]
    keys = {d.idempotency_key for d in receiver.deliveries}
    assert len(keys) == 1


async def test_without_a_deliver_url_replies_are_read_per_turn(serve):
    base = await serve({"pull": {"secret": SECRET}})
    accepted = (await signed_post(f"{base}/webhooks/pull", SECRET, {"text": "hello"})).json()
    path = f"/webhooks/pull/turns/{accepted['turn_id']}"
    async with asyncio.timeout(15):
        while not (reply := await signed_get(f"{base}{path}", SECRET)).json()["messages"]:
            await asyncio.sleep(0.02)
    (message,) = reply.json()["messages"]
    assert message["kind"] == "reply" and message["text"].startswith("[demo]")
    assert (await signed_get(f"{base}{path}", "wrong")).status == 401


async def test_health(serve):
    base = await serve({"hook": {"secret": SECRET}})
    async with aiohttp.ClientSession() as client, client.get(f"{base}/healthz") as r:
        assert r.status == 200 and (await r.json())["status"] == "ok"


async def test_an_unknown_turn_id_is_404_on_a_pull_route(serve):
    base = await serve({"pull": {"secret": PULL_SECRET}, "other": {"secret": SECRET}})
    accepted = (await signed_post(f"{base}/webhooks/pull", PULL_SECRET, {"text": "hello"})).json()
    assert (await signed_get(f"{base}/webhooks/pull/turns/t-never-issued", PULL_SECRET)).status == 404
    # A turn of another route is not this route's to read.
    assert (await signed_get(f"{base}/webhooks/other/turns/{accepted['turn_id']}", SECRET)).status == 404


async def test_two_quick_posts_to_one_chat_each_end_with_a_delivered_message(serve, receiver, tmp_path):
    script = tmp_path / "script.json"  # the first turn is still thinking when the second message comes
    script.write_text(json.dumps({"parent": [[{"sleep": 5, "text": "first answer"}], [{"text": "second answer"}]]}))
    base = await serve({"hook": {"secret": SECRET, "deliver_url": receiver.url}},
                       model={"provider": "scripted", "script": str(script)})
    first = (await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "first", "chat_id": "c"})).json()
    second = (await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "second", "chat_id": "c"})).json()
    await receiver.wait_for(lambda: {d.json["turn_id"] for d in receiver.unique.values()} >= {
        first["turn_id"], second["turn_id"]})
    await serve.quiet()
    by_turn = {d.json["turn_id"]: d.json["text"] for d in receiver.unique.values()}
    assert by_turn == {first["turn_id"]: "(Superseded by your next message.)", second["turn_id"]: "second answer"}


async def test_a_queued_turn_that_stop_drops_ends_with_the_stop_note(serve, receiver, tmp_path):
    script = tmp_path / "script.json"  # the first turn is still thinking when the others come
    script.write_text(json.dumps({"parent": [[{"sleep": 30, "text": "first answer"}], [{"text": "never"}]]}))
    base = await serve({"hook": {"secret": SECRET, "deliver_url": receiver.url}},
                       model={"provider": "scripted", "script": str(script)}, display={"busy_input_mode": "queue"})
    first = (await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "first", "chat_id": "c"})).json()
    second = (await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "second", "chat_id": "c"})).json()
    await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "/stop", "chat_id": "c"})
    await receiver.wait_for(lambda: len(receiver.unique) == 3)
    await serve.quiet()
    by_turn = {d.json["turn_id"]: d.json["text"] for d in receiver.unique.values() if d.json["kind"] == "reply"}
    assert by_turn == {first["turn_id"]: "(Stopped by /stop.)", second["turn_id"]: "(Stopped by /stop.)"}
    (answer,) = [d.json["text"] for d in receiver.unique.values() if d.json["kind"] == "command"]
    assert answer.startswith("Stopped the running turn. Dropped 1 message that was waiting for its turn")


async def test_a_question_the_model_asks_is_answered_by_the_next_post_under_the_asking_turn(serve, receiver,
                                                                                            tmp_path):
    script = tmp_path / "script.json"
    ask = {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which region?"}}]}
    script.write_text(json.dumps({"parent": [[ask, {"text": "deployed"}]]}))
    base = await serve({"hook": {"secret": SECRET, "deliver_url": receiver.url}},
                       model={"provider": "scripted", "script": str(script)})
    first = (await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "deploy", "chat_id": "c"})).json()
    await receiver.wait_for(lambda: receiver.unique)
    [question] = [d.json for d in receiver.unique.values()]
    assert question["text"].startswith("❓ Which region?") and question["turn_id"] == first["turn_id"]
    answer = (await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "eu-west", "chat_id": "c"})).json()
    assert answer["turn_id"] == first["turn_id"]
    await receiver.wait_for(lambda: len(receiver.unique) == 2)
    await serve.quiet()
    assert [d.json["text"] for d in receiver.unique.values()][1] == "deployed"


async def test_a_pull_route_reads_the_background_completion_under_the_turn_that_started_it(serve):
    base = await serve({"pull": {"secret": SECRET}})
    accepted = (await signed_post(f"{base}/webhooks/pull", SECRET, {"text": LIST})).json()
    path = f"{base}/webhooks/pull/turns/{accepted['turn_id']}"
    await serve.quiet()
    read = (await signed_get(path, SECRET)).json()
    assert read["complete"] is True
    assert [m["kind"] for m in read["messages"]] == ["reply", "completion"]
    assert "apples: completed" in read["messages"][1]["text"]


async def test_a_pull_read_is_incomplete_while_background_work_runs(serve, tmp_path):
    base = await serve({"pull": {"secret": SECRET}}, model={"demo": {"child_steps": 1, "step_seconds": 30}})
    accepted = (await signed_post(f"{base}/webhooks/pull", SECRET, {"text": LIST})).json()
    path = f"{base}/webhooks/pull/turns/{accepted['turn_id']}"
    async with asyncio.timeout(15):
        while not (read := (await signed_get(path, SECRET)).json())["messages"]:
            await asyncio.sleep(0.02)  # polling, as a caller would
    assert read["complete"] is False and [m["kind"] for m in read["messages"]] == ["reply"]


async def test_a_pull_read_gives_each_message_the_fields_of_a_delivery(serve, receiver):
    base = await serve({"pull": {"secret": PULL_SECRET}, "push": {"secret": SECRET, "deliver_url": receiver.url}})
    pulled = (await signed_post(f"{base}/webhooks/pull", PULL_SECRET, {"text": LIST, "chat_id": "ops"})).json()
    pushed = (await signed_post(f"{base}/webhooks/push", SECRET, {"text": LIST, "chat_id": "ops"})).json()
    await receiver.wait_for(lambda: len(receiver.unique) == 2)
    await serve.quiet()
    read = (await signed_get(f"{base}/webhooks/pull/turns/{pulled['turn_id']}", PULL_SECRET)).json()
    delivered = receiver.payloads
    assert [sorted(m) for m in read["messages"]] == [sorted(d) for d in delivered]
    (reply, completion), (push_reply, push_completion) = read["messages"], delivered
    assert (reply["route"], reply["chat_id"], reply["turn_id"]) == ("pull", "ops", pulled["turn_id"])
    assert (push_reply["turn_id"], reply["kind"], completion["kind"]) == (pushed["turn_id"], "reply", "completion")
    # Like a delivered completion, a read one names its own internal turn, not the asking one.
    assert completion["turn_id"] not in (None, pulled["turn_id"]) and completion["chat_id"] == "ops"
    assert push_completion["turn_id"] not in (None, pushed["turn_id"])
    default = (await signed_post(f"{base}/webhooks/pull", PULL_SECRET, {"text": "hello"})).json()
    await serve.quiet()
    (message,) = (await signed_get(f"{base}/webhooks/pull/turns/{default['turn_id']}", PULL_SECRET)).json()["messages"]
    assert message["chat_id"] is None and message["route"] == "pull"


async def test_a_resent_answer_to_a_question_names_the_asking_turn_as_the_first_answer_did(serve, tmp_path):
    script = tmp_path / "script.json"
    ask = {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which region?"}}]}
    script.write_text(json.dumps({"parent": [[ask, {"text": "deployed"}]]}))
    base = await serve({"pull": {"secret": SECRET}}, model={"provider": "scripted", "script": str(script)})
    asking = (await signed_post(f"{base}/webhooks/pull", SECRET, {"text": "deploy", "chat_id": "c"})).json()
    path = f"{base}/webhooks/pull/turns/{asking['turn_id']}"
    async with asyncio.timeout(15):
        while not (await signed_get(path, SECRET)).json()["messages"]:
            await asyncio.sleep(0.02)  # polling, as a caller would, until the question is there
    body, ts = json.dumps({"text": "eu-west", "chat_id": "c"}).encode(), str(int(time.time()))
    first = (await signed_post(f"{base}/webhooks/pull", SECRET, body, timestamp=ts)).json()
    again = (await signed_post(f"{base}/webhooks/pull", SECRET, body, timestamp=ts)).json()  # its answer was lost
    assert first["turn_id"] == asking["turn_id"]
    assert (again["duplicate"], again["turn_id"]) == (True, asking["turn_id"])
    await serve.quiet()
    read = (await signed_get(path, SECRET)).json()
    assert read["complete"] is True and [m["text"] for m in read["messages"]][-1] == "deployed"


async def test_in_steer_mode_each_request_still_gets_a_turn_of_its_own(serve, receiver, tmp_path):
    # A steered request would share the running turn's id, and when that turn ended before reading it
    # its answer came under another id than the one the 202 gave: a caller following its id missed it.
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"parent": [[{"sleep": 0.5, "text": "first answer"}], [{"text": "second answer"}]]}))
    base = await serve({"hook": {"secret": SECRET, "deliver_url": receiver.url}},
                       model={"provider": "scripted", "script": str(script)}, display={"busy_input_mode": "steer"})
    first = (await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "first", "chat_id": "c"})).json()
    second = (await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "second", "chat_id": "c"})).json()
    await receiver.wait_for(lambda: len(receiver.unique) == 2)
    await serve.quiet()
    by_turn = {d.json["turn_id"]: d.json["text"] for d in receiver.unique.values()}
    assert by_turn == {first["turn_id"]: "first answer", second["turn_id"]: "second answer"}


async def test_a_pull_route_reads_a_commands_answer_by_the_turn_id_its_202_names(serve, receiver):
    base = await serve({"pull": {"secret": PULL_SECRET}, "hook": {"secret": SECRET, "deliver_url": receiver.url}})
    accepted = (await signed_post(f"{base}/webhooks/pull", PULL_SECRET, {"text": "/help"})).json()
    assert accepted["turn_id"]  # the caller has something to read the answer by
    path = f"{base}/webhooks/pull/turns/{accepted['turn_id']}"
    async with asyncio.timeout(15):
        while not (read := (await signed_get(path, PULL_SECRET)).json())["complete"]:
            await asyncio.sleep(0.02)
    (answer,) = read["messages"]
    assert (answer["kind"], answer["turn_id"], answer["sequence"]) == ("command", accepted["turn_id"], 0)
    assert "/new" in answer["text"]
    # /new with text: its acknowledgement goes out under the turn the 202 names, before that turn's reply.
    renewed = (await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "/new plan the trip"})).json()
    await receiver.wait_for(lambda: {d.json["kind"] for d in receiver.unique.values()} >= {"command", "reply"})
    sent = sorted((d.json for d in receiver.unique.values()), key=lambda m: m["sequence"])
    assert [(m["kind"], m["turn_id"], m["sequence"]) for m in sent] == [
        ("command", renewed["turn_id"], 0), ("reply", renewed["turn_id"], 1)]


@pytest.mark.parametrize(("display", "expected"), [
    ({"long_running_notifications": True}, ["notice", "reply"]),
    ({"progress": "card", "progress_delay": 0}, ["reply"]),  # notices stay off, the webhook's default
], ids=["notices", "card"])
async def test_a_webhook_turn_gets_one_notice_at_most_and_nothing_after_its_reply(serve, receiver, display, expected):
    """A receiver cannot have a delivery changed: each update of a notice, and its outcome, would
    be one more delivery, the last after the answer. Notices on, the first one alone goes; no card."""
    base = await serve({"hook": {"secret": SECRET, "deliver_url": receiver.url}}, display=display,
                       agent={"gateway_notify_interval": 0.2},
                       model={"demo": {"child_steps": 3, "step_seconds": 0.4}},
                       delegation={"gateway_mode": "inline"})
    assert (await signed_post(f"{base}/webhooks/hook", SECRET, {"text": LIST})).status == 202
    await receiver.wait_for(lambda: any(d.json["kind"] == "reply" for d in receiver.unique.values()), timeout=30)
    await serve.quiet()
    kinds = [d.json["kind"] for d in receiver.unique.values()]  # in the order they arrived
    assert kinds == expected


@pytest.mark.parametrize("pull", [False, True], ids=["delivered", "read"])
async def test_a_request_set_aside_ends_its_turn_with_the_apology(serve, receiver, pull):
    """The turn id the 202 named ends with a message also when the request is set aside as a dead
    letter: the apology is delivered under it, and a read of it completes."""
    route = {"secret": SECRET} if pull else {"secret": SECRET, "deliver_url": receiver.url}
    base = await serve({"hook": route}, inbox={"max_attempts": 1})
    break_new_sessions(serve.gateway)
    reply = await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "hello"})
    turn = reply.json()["turn_id"]
    if pull:
        async with asyncio.timeout(10):
            while not (read := (await signed_get(f"{base}/webhooks/hook/turns/{turn}", SECRET)).json())["complete"]:
                await asyncio.sleep(0.05)
        messages = read["messages"]
    else:
        await receiver.wait_for(lambda: receiver.unique, timeout=10)
        messages = [d.json for d in receiver.unique.values()]
    assert [(m["turn_id"], m["kind"], m["text"]) for m in messages] == [(turn, "command", APOLOGY)]
