"""SlackAdapter on the real slack-bolt / slack-sdk clients against the loopback FakeSlack."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import urllib.parse
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms import slack_history
from platforms.base import (
    Adapter,
    BadRequest,
    CommandSpec,
    DeliveryError,
    EditUnsupported,
    Forbidden,
    Inbound,
    MessageTooLong,
    NetworkError,
    NotFound,
    Outbound,
    RateLimited,
    Unauthorized,
)
from platforms.fakes._slack_http import sign
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter, SlackStartError
from platforms.unsigned_bodies import UnsignedBodies
from tests.platforms.slack_client import fake_slack
from tests.sqlite_errors import full_disk

SECRET = "test-signing-secret"
COMMANDS = [CommandSpec("stop", "Stop the turn"), CommandSpec("new", "New session", aliases=("reset",)),
            CommandSpec("agents", "List")]
PLACEHOLDER = "_working…_"


class Recorder:
    """The gateway stand-in: records every Inbound it is handed."""

    def __init__(self) -> None:
        self.items: list[Inbound] = []
        self.failures: list[Exception] = []
        """Raised, one per call, before recording: a gateway whose inbox is down."""

    async def __call__(self, inbound: Inbound) -> None:
        if self.failures:
            raise self.failures.pop(0)
        self.items.append(inbound)


fake = fake_slack()


@pytest.fixture
async def sink() -> Recorder:
    return Recorder()


@pytest.fixture
async def slack(fake: FakeSlack, sink: Recorder) -> AsyncIterator[SlackAdapter]:
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2)
    await adapter.start(sink, COMMANDS)
    yield adapter
    await adapter.stop()


@contextlib.asynccontextmanager
async def mounted(adapter: SlackAdapter) -> AsyncIterator[str]:
    """``adapter``'s HTTP routes on a stand-in for the gateway's server; yields their events URL."""
    app = web.Application()
    app.router.add_routes(adapter.web_routes())
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}/slack/events"
    finally:
        await runner.cleanup()


@pytest.fixture
async def http_slack(fake: FakeSlack, sink: Recorder) -> AsyncIterator[tuple[SlackAdapter, str]]:
    """An HTTP-mode adapter mounted on a stand-in for the gateway's server."""
    adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base)
    async with mounted(adapter) as url:
        fake.events_url, fake.signing_secret = url, SECRET
        await adapter.start(sink, COMMANDS)
        yield adapter, url
        await adapter.stop()


@contextlib.asynccontextmanager
async def stopping_midway(fake: FakeSlack, sink: Recorder) -> AsyncIterator[None]:
    """An HTTP-mode adapter the fake delivers to, stopping while the block runs: held midway (a
    placeholder's deletion in flight), with its events still served; the stop ends after the block."""
    adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base)
    async with mounted(adapter) as url:
        fake.events_url, fake.signing_secret = url, SECRET
        await adapter.start(sink, COMMANDS)
        await adapter.typing("C1", None)  # a placeholder the stop deletes: held, it holds the stop midway
        deleting = fake.hold("chat.delete")
        stopping = asyncio.create_task(adapter.stop())
        try:
            await fake.wait_for(lambda: fake.calls_to("chat.delete"))
            yield
        finally:
            deleting.set()
            await stopping


async def settled(fake: FakeSlack) -> None:
    """Every envelope pushed so far has been acked, so its Inbound (if any) has been handed over."""
    await fake.wait_for(lambda: bool(fake.envelopes) and all(e.acked for e in fake.envelopes.values()))


def texts(fake: FakeSlack, channel: str, thread_ts: str | None = None) -> list[str]:
    return fake.texts(channel, thread_ts)


# -- shape ---------------------------------------------------------------------------------


def test_adapter_protocol_and_tier() -> None:
    adapter = SlackAdapter(bot_token="xoxb-1", app_token="xapp-1")
    assert isinstance(adapter, Adapter)
    assert adapter.name == "slack" and adapter.text_limit == 4000 and adapter.measure("héllo") == 5
    assert adapter.tier.interim_assistant_messages and adapter.tier.long_running_notifications is True
    assert adapter.tier.messaging
    assert adapter.web_routes() == []


@pytest.mark.parametrize("kw", [{"mode": "socket"}, {"mode": "http"}, {"mode": "rtm", "app_token": "xapp-1"}])
def test_constructor_rejects_incomplete_config(kw: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        SlackAdapter(bot_token="xoxb-1", **kw)  # type: ignore[arg-type]


async def test_bad_bot_token_fails_start(fake: FakeSlack, sink: Recorder) -> None:
    adapter = SlackAdapter(bot_token="xoxb-wrong", app_token=fake.app_token, api_base=fake.api_base)
    with pytest.raises(Unauthorized):
        await adapter.start(sink)
    await adapter.stop()


async def test_bad_app_token_fails_start(fake: FakeSlack, sink: Recorder) -> None:
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token="xapp-wrong", api_base=fake.api_base)
    with pytest.raises(Unauthorized):
        await adapter.start(sink)
    assert fake.connections == []


async def test_a_socket_that_will_not_open_fails_start_naming_slack_and_socket_mode(
    fake: FakeSlack, sink: Recorder
) -> None:
    """auth.test and apps.connections.open answer, but no WebSocket opens (a proxy that blocks
    them): start fails within its bound with an error the operator can place, no ticket in it."""
    fake.refuse_sockets(100)
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.1, connect_timeout=0.5)
    with pytest.raises(SlackStartError) as raised:
        await adapter.start(sink)
    assert raised.value.platform == "slack"
    assert str(raised.value) == (f"Socket Mode: no WebSocket to {fake.ws_url.split('/')[2]} within 0.5s;"
                                 " a proxy or firewall must let WebSockets (wss://) through")
    assert fake.open_connections == []


def message_key(body: dict) -> str:
    """The adapter's event id for a message event: where the message is and its ts."""
    return f"{body['event']['channel']}:{body['event']['ts']}"


# -- inbound over Socket Mode --------------------------------------------------------------


async def test_dm_is_one_private_session(fake: FakeSlack, slack: SlackAdapter, sink: Recorder) -> None:
    body = await fake.push_dm("U1", "hello there")
    await fake.wait_for(lambda: len(sink.items) == 1)
    [inbound] = sink.items
    assert inbound == Inbound(platform="slack", chat_id="DU1", thread_id=None, user_id="U1", user_name=None,
                              text="hello there", event_id=message_key(body), is_private=True,
                              sent_at=float(body["event"]["ts"]), message_id=body["event"]["ts"])
    await settled(fake)
    assert all(ack.connection == 1 for ack in fake.acks)


async def test_mention_starts_thread_session_and_reply_goes_there(
    fake: FakeSlack, slack: SlackAdapter, sink: Recorder
) -> None:
    body = await fake.push_mention("C1", "U1", "what is up?")
    await fake.wait_for(lambda: len(sink.items) == 1)
    inbound = sink.items[0]
    ts = body["event"]["ts"]
    assert (inbound.chat_id, inbound.thread_id, inbound.text, inbound.is_private) == ("C1", ts, "what is up?", False)

    sent = await slack.send(Outbound(chat_id="C1", thread_id=inbound.thread_id, text="all good"))
    assert texts(fake, "C1", ts) == ["all good"]
    assert fake.calls_to("chat.postMessage")[-1].params["thread_ts"] == ts
    await slack.edit("C1", ts, sent.message_id, "all good, edited")
    assert texts(fake, "C1", ts) == ["all good, edited"]
    await settled(fake)  # the echoed bot post and edit were acked and ignored
    assert len(sink.items) == 1


async def test_mention_inside_thread_keeps_that_thread(fake: FakeSlack, slack: SlackAdapter, sink: Recorder) -> None:
    await fake.push_mention("C1", "U1", "hi <@UBOT|switchboard>, look", thread_ts="1700000000.000001")
    await fake.wait_for(lambda: len(sink.items) == 1)
    assert sink.items[0].thread_id == "1700000000.000001"
    assert sink.items[0].text == "hi , look"


async def test_unmentioned_channel_messages_are_ignored(fake: FakeSlack, slack: SlackAdapter, sink: Recorder) -> None:
    await fake.push_message("C1", "U1", "just chatting")
    await fake.push_message("C1", "U1", "in someone's thread", thread_ts="1700000000.000009")
    await fake.push_message("C1", "U1", "!stop")  # top level: no session to stop
    await fake.push_event({"type": "message", "subtype": "channel_join", "channel": "C1", "user": "U2",
                           "ts": "1700000001.000001", "text": "joined"})
    await settled(fake)
    assert sink.items == []


async def test_follow_up_in_bot_thread_needs_no_mention(fake: FakeSlack, slack: SlackAdapter, sink: Recorder) -> None:
    body = await fake.push_mention("C1", "U1", "start")
    ts = body["event"]["ts"]
    await fake.push_message("C1", "U1", "and another thing", thread_ts=ts)
    await fake.wait_for(lambda: len(sink.items) == 2)
    assert {(i.thread_id, i.text) for i in sink.items} == {(ts, "start"), (ts, "and another thing")}


async def test_app_mention_and_message_event_give_one_inbound(
    fake: FakeSlack, slack: SlackAdapter, sink: Recorder
) -> None:
    await fake.push_mention("C1", "U1", "once please", also_app_mention=True)
    await settled(fake)
    assert len(fake.envelopes) == 2 and [i.text for i in sink.items] == ["once please"]


async def test_bang_stop_in_thread_passes_through(fake: FakeSlack, slack: SlackAdapter, sink: Recorder) -> None:
    # A thread the adapter has never seen (e.g. started before a restart): only the commands pass.
    await fake.push_message("C1", "U1", "!stop", thread_ts="1700000000.000005")
    await fake.push_message("C1", "U1", "!new", thread_ts="1700000000.000005")
    await fake.push_message("C1", "U1", "!later", thread_ts="1700000000.000005")
    await settled(fake)
    assert [(i.text, i.thread_id, i.is_command) for i in sink.items] == [
        ("!stop", "1700000000.000005", False), ("!new", "1700000000.000005", False)]


async def test_messages_from_bots_are_ignored(fake: FakeSlack, slack: SlackAdapter, sink: Recorder) -> None:
    await fake.push_event({"type": "message", "channel": "DU1", "channel_type": "im", "user": "UOTHER",
                           "bot_id": "BOTHER", "ts": "1700000001.000001", "text": "beep"})
    await fake.push_event({"type": "message", "channel": "DU1", "channel_type": "im", "user": "UBOT",
                           "ts": "1700000001.000002", "text": "my own"})
    await settled(fake)
    assert sink.items == []


async def test_slash_command_over_socket_is_answered_ephemerally(
    fake: FakeSlack, slack: SlackAdapter, sink: Recorder
) -> None:
    form = await fake.push_slash_command("/agents", "U1", "C1", "all")
    await fake.wait_for(lambda: len(sink.items) == 1)
    inbound = sink.items[0]
    assert (inbound.is_command, inbound.text, inbound.chat_id, inbound.thread_id) == (True, "/agents all", "C1", None)
    assert inbound.event_id == f"command:{form['trigger_id']}" and inbound.user_name is None
    assert inbound.reply_token and not inbound.is_private
    await settled(fake)

    sent = await slack.send(Outbound(chat_id="C1", thread_id=None, text="no agents running", kind="command",
                                     reply_token=inbound.reply_token))
    assert fake.ephemeral[-1]["text"] == "no agents running"
    assert fake.ephemeral[-1]["via"] == "response_url" and fake.ephemeral[-1]["response_type"] == "ephemeral"
    assert texts(fake, "C1") == []
    with pytest.raises(EditUnsupported):
        await slack.edit("C1", None, sent.message_id, "changed")


async def test_command_answer_falls_back_to_post_ephemeral(
    fake: FakeSlack, slack: SlackAdapter, sink: Recorder
) -> None:
    await fake.push_slash_command("/stop", "U1", "DU1")
    await fake.wait_for(lambda: len(sink.items) == 1)
    assert sink.items[0].is_private
    fake.fail_next("response_url", "expired_url", status=404)
    await slack.send(Outbound(chat_id="DU1", thread_id=None, text="stopped", reply_token=sink.items[0].reply_token))
    [call] = fake.calls_to("chat.postEphemeral")
    assert call.params == {"channel": "DU1", "user": "U1", "text": "stopped"}


@pytest.mark.parametrize("status", [500, 503])
async def test_a_command_answer_whose_response_url_failed_with_a_5xx_is_not_posted_the_other_way(
    fake: FakeSlack, slack: SlackAdapter, sink: Recorder, status: int
) -> None:
    # A 5xx says nothing of whether Slack showed the answer: posting it at once with chat.postEphemeral
    # showed it twice whenever it had. Only a refused URL (expired, used up) falls back.
    await fake.push_slash_command("/stop", "U1", "C1")
    await fake.wait_for(lambda: len(sink.items) == 1)
    answer = Outbound(chat_id="C1", thread_id=None, text="stopped", kind="command",
                      reply_token=sink.items[0].reply_token)
    fake.fail_next("response_url", "internal_error", status=status)
    with pytest.raises(NetworkError):
        await slack.send(answer)
    assert fake.calls_to("chat.postEphemeral") == []
    await slack.send(answer)  # the outbox's retry goes through the URL again
    assert [(e["text"], e["via"]) for e in fake.ephemeral] == [("stopped", "response_url")]
    assert fake.calls_to("chat.postEphemeral") == []


async def test_an_outbox_answer_whose_response_url_failed_with_a_5xx_is_retried_through_it(
    fake: FakeSlack, slack: SlackAdapter, sink: Recorder, tmp_path
) -> None:
    await fake.push_slash_command("/stop", "U1", "C1")
    await fake.wait_for(lambda: len(sink.items) == 1)
    fake.fail_next("response_url", "internal_error", status=500)
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"slack": slack}, clock=FakeClock())
    await outbox.start()
    try:
        outbox.enqueue("slack", "C1", None, "stopped", kind="command", key="c1",
                       reply_token=sink.items[0].reply_token)
        assert (await outbox.wait_sent("c1:0", timeout=5.0) or "").startswith("ephemeral:")
    finally:
        await outbox.close()
        store.close()
    assert [(e["text"], e["via"]) for e in fake.ephemeral] == [("stopped", "response_url")]
    assert len(fake.calls_to("response_url")) == 2 and fake.calls_to("chat.postEphemeral") == []


async def test_socket_redelivery_keeps_event_id(fake: FakeSlack, slack: SlackAdapter, sink: Recorder) -> None:
    fake.ack_timeout = 0.2
    fake.lose_next_ack()
    body = await fake.push_dm("U1", "say it twice")
    await fake.wait_for(lambda: len(sink.items) >= 2)
    assert {i.event_id for i in sink.items} == {message_key(body)}  # the gateway inbox drops the repeat
    [envelope] = fake.envelopes.values()
    assert envelope.retry_attempt >= 1 and envelope.retry_reason == "timeout"


async def test_socket_sink_failure_is_not_acked_so_slack_redelivers(
    fake: FakeSlack, slack: SlackAdapter, sink: Recorder
) -> None:
    fake.ack_timeout = 0.2
    sink.failures.append(RuntimeError("inbox unavailable"))
    body = await fake.push_dm("U1", "keep me")
    await fake.wait_for(lambda: len(sink.items) == 1)
    [envelope] = fake.envelopes.values()
    assert envelope.retry_attempt >= 1 and sink.items[0].event_id == message_key(body)


@pytest.mark.parametrize("cut", ["disconnect", "drop"])
async def test_reconnect_leaves_a_single_consumer(
    fake: FakeSlack, slack: SlackAdapter, sink: Recorder, cut: str
) -> None:
    if cut == "disconnect":
        await fake.disconnect()
    else:
        fake.drop_socket()
    await fake.wait_for(lambda: len(fake.connections) == 2 and len(fake.open_connections) == 1)
    for n in range(4):
        await fake.push_dm("U1", f"after {n}")
    await fake.wait_for(lambda: len(sink.items) == 4)
    await settled(fake)
    assert [c.id for c in fake.open_connections] == [2]
    assert {d for e in fake.envelopes.values() for d in e.deliveries} == {2}
    assert {a.connection for a in fake.acks} == {2} and len(fake.acks) == 4


async def test_a_half_open_socket_is_replaced_and_the_events_sent_into_it_arrive(
    fake: FakeSlack, slack: SlackAdapter, sink: Recorder
) -> None:
    """No close frame, no FIN, no pongs: the client's pings go unanswered, it drops the connection
    within about 2.5 ping intervals and opens another, and Slack redelivers what it sent into the
    dead one."""
    fake.stall()
    lost = await fake.push_dm("U1", "into the void")
    await fake.wait_for(lambda: len(fake.open_connections) == 1 and fake.open_connections[0].id == 2, timeout=5)
    await fake.push_dm("U1", "after")
    await fake.wait_for(lambda: len(sink.items) == 2, timeout=5)
    assert {i.text for i in sink.items} == {"into the void", "after"}
    assert message_key(lost) in {i.event_id for i in sink.items}


# -- inbound over HTTP ---------------------------------------------------------------------


async def test_http_url_verification(fake: FakeSlack, http_slack: tuple[SlackAdapter, str]) -> None:
    _, url = http_slack
    result = await fake.send_http_event(url, {"type": "url_verification", "challenge": "c-123", "token": "t"},
                                        SECRET)
    assert result.status == 200 and result.json() == {"challenge": "c-123"}


@pytest.mark.parametrize("trouble", ["wrong secret", "stale", "forged"])
async def test_http_bad_signature_is_401(
    fake: FakeSlack, http_slack: tuple[SlackAdapter, str], sink: Recorder, trouble: str
) -> None:
    _, url = http_slack
    payload = {"type": "event_callback", "event_id": "Ev1", "team_id": fake.team_id,
               "event": {"type": "message", "channel": "DU1", "channel_type": "im", "user": "U1", "ts": "1.1",
                         "text": "hi"}}
    kw: dict[str, object] = {
        "wrong secret": {}, "stale": {"timestamp": int(time.time()) - 400}, "forged": {"signature": "v0=00"},
    }[trouble]
    secret = "not-the-secret" if trouble == "wrong secret" else SECRET
    result = await fake.send_http_event(url, payload, secret, **kw)  # type: ignore[arg-type]
    assert result.status == 401
    assert sink.items == []


@pytest.mark.parametrize("body, headers", [
    ("{", {"Content-Type": "application/json"}),
    ("[1]", {"Content-Type": "application/json"}),
    ("payload=%7B", {"Content-Type": "application/x-www-form-urlencoded"}),
    ("{}", {"Content-Type": "application/json", "X-Slack-Request-Timestamp": "soon", "X-Slack-Signature": "v0=00"}),
    ("{}", {"Content-Type": "application/json", "X-Slack-Request-Timestamp": "NOW",
            "X-Slack-Signature": "v0=ünsigned"}),  # hmac.compare_digest refuses to compare non-ASCII text
    ("{}", {"Content-Type": "application/json; charset=no-such-codec",  # decoding it raises LookupError
            "X-Slack-Request-Timestamp": "NOW", "X-Slack-Signature": "v0=" + "0" * 64}),
])
async def test_http_unsigned_garbage_is_401_not_a_crash(
    fake: FakeSlack, http_slack: tuple[SlackAdapter, str], caplog: pytest.LogCaptureFixture, body: str,
    headers: dict[str, str],
) -> None:
    _, url = http_slack
    headers = {k: str(int(time.time())) if v == "NOW" else v for k, v in headers.items()}  # "NOW": when it runs
    async with aiohttp.ClientSession() as session, session.post(url, data=body, headers=headers) as resp:
        assert resp.status == 401
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_http_event_and_its_retry_share_the_event_id(
    fake: FakeSlack, http_slack: tuple[SlackAdapter, str], sink: Recorder
) -> None:
    _, url = http_slack
    body = await fake.push_mention("C1", "U1", "over http")
    assert fake.http_results[-1].status == 200 and len(sink.items) == 1
    retried = await fake.send_http_event(url, body, SECRET, retry_num=1)
    assert retried.status == 200
    assert [i.event_id for i in sink.items] == [message_key(body)] * 2
    assert sink.items[0].thread_id == body["event"]["ts"]


async def test_http_sink_failure_is_not_acked_so_slack_retries(
    fake: FakeSlack, http_slack: tuple[SlackAdapter, str], sink: Recorder
) -> None:
    sink.failures.append(RuntimeError("inbox unavailable"))
    body = await fake.push_dm("U1", "keep me")
    assert [r.status for r in fake.http_results] == [500, 200]
    assert [i.event_id for i in sink.items] == [message_key(body)]


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_http_sink_failure_is_logged_once_with_its_traceback(
    fake: FakeSlack, http_slack: tuple[SlackAdapter, str], sink: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    # A bug in the gateway is worth its traceback; it was bolt's generic "Failed to run listener function".
    sink.failures.append(RuntimeError("inbox unavailable"))
    body = await fake.push_dm("U1", "keep me")
    assert [r.status for r in fake.http_results] == [500, 200]
    assert tracebacks(caplog) == [f"platforms.slack: slack: message {message_key(body)} was not taken by the gateway"
                                  " (RuntimeError: inbox unavailable); not acknowledged, so Slack sends it again"]


async def test_http_storage_refusal_is_told_in_a_line_not_a_traceback(
    fake: FakeSlack, http_slack: tuple[SlackAdapter, str], sink: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    sink.failures.append(full_disk())
    body = await fake.push_dm("U1", "keep me")
    assert [r.status for r in fake.http_results] == [500, 200]
    assert [i.event_id for i in sink.items] == [message_key(body)]
    assert tracebacks(caplog) == []
    assert any("not taken by the gateway (OperationalError" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(("failure", "logged"), [
    (RuntimeError("a bug"), "slack: message {key} failed; not acknowledged, so Slack sends it again"),
    (NetworkError("files.info unreachable"), None),
])
async def test_http_listener_failure_before_the_hand_over_is_told_by_the_adapter(
    fake: FakeSlack, http_slack: tuple[SlackAdapter, str], sink: Recorder, caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch, failure: Exception, logged: str | None,
) -> None:
    # Reading the message failed (its files, say): a bug with its traceback, a platform that could not
    # be reached in a line of its own. Both were bolt's "Failed to run listener function" and a traceback.
    slack, _ = http_slack
    real = slack._attachments

    async def once(event):
        monkeypatch.setattr(slack, "_attachments", real)
        raise failure

    monkeypatch.setattr(slack, "_attachments", once)
    body = await fake.push_dm("U1", "keep me")
    assert [r.status for r in fake.http_results] == [500, 200]
    assert [i.event_id for i in sink.items] == [message_key(body)]
    key = message_key(body)
    assert tracebacks(caplog) == ([] if logged is None else [f"platforms.slack: {logged.format(key=key)}"])
    if logged is None:
        assert f"slack: message {key} not taken (NetworkError: files.info unreachable); not acknowledged, so Slack" \
               " sends it again" in [r.getMessage() for r in caplog.records]


async def test_a_command_whose_body_was_still_arriving_when_the_stop_ended_is_answered_to_send_it_again(
    fake: FakeSlack, sink: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    # Its signature checked after the stop had sent its answers and closed its client: a 500 and an
    # AssertionError's traceback, and Slack told its user only that the command failed.
    bodies = UnsignedBodies()
    adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base,
                           bodies=bodies)
    form = urllib.parse.urlencode({
        "token": "t", "team_id": fake.team_id, "api_app_id": fake.app_id, "channel_id": "DU1", "user_id": "U1",
        "command": "/new", "text": "", "response_url": f"{fake.base_url}/response/R1", "trigger_id": "R1.x",
    }).encode()
    half = asyncio.Event()

    async def arriving() -> AsyncIterator[bytes]:
        yield form[:10]
        await half.wait()
        yield form[10:]

    ts = str(int(time.time()))
    headers = {"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": ts,
               "X-Slack-Signature": sign(SECRET, ts, form.decode())}
    async with mounted(adapter) as url, aiohttp.ClientSession() as http:
        await adapter.start(sink, COMMANDS)
        posting = asyncio.ensure_future(http.post(url, data=arriving(), headers=headers))
        await fake.wait_for(lambda: bodies.reading == 1)  # the adapter is reading it
        await adapter.stop()
        half.set()
        async with await posting as resp:
            assert resp.status == 200
            assert await resp.text() == "⚠️ Not taken: the bot is restarting. Send `/new` again in a minute."
    assert sink.items == [] and tracebacks(caplog) == []


@pytest.mark.parametrize("with_files", [False, True], ids=["text", "files"])
async def test_http_message_during_a_stop_is_left_for_slack_in_a_line_not_a_traceback(
    fake: FakeSlack, sink: Recorder, caplog: pytest.LogCaptureFixture, with_files: bool
) -> None:
    # Unacknowledged on purpose, so the next process gets it; bolt logged each one with a traceback. One
    # with files had them described first, through a client the stop may have closed: a warning instead.
    caplog.set_level(logging.INFO, logger="platforms.slack")
    fake.http_retry_delays = ()
    async with stopping_midway(fake, sink):
        if with_files:
            body = await fake.push_file("DU1", "U1", b"x", "notes.txt", text="read this", connect=True)
        else:
            body = await fake.push_dm("U1", "sent as the gateway stops")
    assert 500 in [r.status for r in fake.http_results] and sink.items == []  # (the others: the bot's own echoes)
    assert fake.calls_to("files.info") == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and r.name == "platforms.slack"]
    assert tracebacks(caplog) == []
    assert f"slack: slack adapter stopping: {message_key(body)} left for Slack to send again" in [
        r.getMessage() for r in caplog.records]


async def test_http_slash_command(fake: FakeSlack, http_slack: tuple[SlackAdapter, str], sink: Recorder) -> None:
    slack, _ = http_slack
    form = await fake.push_slash_command("/new", "U1", "DU1")
    assert fake.http_results[-1].status == 200 and fake.http_results[-1].text == ""
    [inbound] = sink.items
    assert (inbound.is_command, inbound.text, inbound.event_id) == (True, "/new", f"command:{form['trigger_id']}")
    await slack.send(Outbound(chat_id="DU1", thread_id=None, text="fresh start", reply_token=inbound.reply_token))
    assert [e["text"] for e in fake.ephemeral] == ["fresh start"]
    # Slack escapes a command's text as it does a message's: the model reads what was typed.
    await fake.push_slash_command("/new", "U1", "DU1", "plan a &amp; b &lt;today&gt;")
    assert sink.items[-1].text == "/new plan a & b <today>"


async def test_http_acks_within_three_seconds_even_if_sink_is_slow(fake: FakeSlack) -> None:
    release = asyncio.Event()
    handed: list[Inbound] = []

    async def slow_sink(inbound: Inbound) -> None:
        await release.wait()
        handed.append(inbound)

    adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base,
                           sink_timeout=0.2)
    app = web.Application()
    app.router.add_routes(adapter.web_routes())
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        await adapter.start(slow_sink)
        payload = {"type": "event_callback", "event_id": "EvSlow", "team_id": fake.team_id,
                   "event": {"type": "message", "channel": "DU1", "channel_type": "im", "user": "U1",
                             "ts": "1.1", "text": "slow"}}
        # The fake gives up after Slack's 3 s, as Slack does: the ack came in time, while the sink still held it.
        result = await fake.send_http_event(f"http://{host}:{port}/slack/events", payload, SECRET)
        assert result.status == 200 and not handed
        release.set()
        await fake.wait_for(lambda: len(handed) == 1)
    finally:
        await adapter.stop()
        await runner.cleanup()


async def test_http_routes_answer_503_before_start(fake: FakeSlack) -> None:
    adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base)
    app = web.Application()
    app.router.add_routes(adapter.web_routes())
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        result = await fake.send_http_event(f"http://{host}:{port}/slack/events", {"type": "x"}, SECRET)
        assert result.status == 503
    finally:
        await runner.cleanup()


# -- outbound errors -----------------------------------------------------------------------


async def test_429_on_post_raises_at_once_and_other_chats_go_on(fake: FakeSlack, slack: SlackAdapter) -> None:
    fake.fail_next("chat.postMessage", status=429, retry_after=30)
    started = time.monotonic()
    first, second = await asyncio.gather(
        slack.send(Outbound(chat_id="C1", thread_id=None, text="one")),
        slack.send(Outbound(chat_id="C2", thread_id=None, text="two")),
        return_exceptions=True,
    )
    assert time.monotonic() - started < 2
    failed, ok = (first, second) if isinstance(first, RateLimited) else (second, first)
    assert isinstance(failed, RateLimited) and failed.retry_after == 30 and failed.method == "chat.postMessage"
    assert not isinstance(ok, BaseException)


async def test_429_on_update(fake: FakeSlack, slack: SlackAdapter) -> None:
    sent = await slack.send(Outbound(chat_id="C1", thread_id=None, text="notice"))
    fake.fail_next("chat.update", status=429, retry_after=2)
    with pytest.raises(RateLimited) as caught:
        await slack.edit("C1", None, sent.message_id, "notice, later")
    assert caught.value.retry_after == 2 and caught.value.chat_id == "C1"


async def test_message_not_found_on_update(fake: FakeSlack, slack: SlackAdapter) -> None:
    with pytest.raises(NotFound):
        await slack.edit("C1", None, "1700000000.999999", "gone")


@pytest.mark.parametrize(("error", "status", "kind"), [
    ("channel_not_found", 200, NotFound),
    ("not_in_channel", 200, Forbidden),
    ("invalid_auth", 200, Unauthorized),  # the token, in every channel: the outbox holds, not fails
    ("token_revoked", 200, Unauthorized),
    ("msg_too_long", 200, MessageTooLong),
    ("cant_update_message", 200, EditUnsupported),
    ("internal_error", 500, NetworkError),
    ("invalid_arguments", 200, BadRequest),
])
async def test_errors_are_translated(
    fake: FakeSlack, slack: SlackAdapter, error: str, status: int, kind: type[DeliveryError]
) -> None:
    fake.fail_next("chat.postMessage", error, status=status)
    with pytest.raises(kind) as caught:
        await slack.send(Outbound(chat_id="C9", thread_id="1.2", text="x"))
    assert caught.value.method == "chat.postMessage" and caught.value.chat_id == "C9"


async def test_a_failure_all_of_slack_shares_is_warned_of_once_a_channels_own_is_left_to_its_caller(
    fake: FakeSlack, slack: SlackAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    """In an outage every chat's retries fail alike: one warning says so, not one per call. A channel's
    own refusal of a part fails it, which the outbox warns of: a warning here was the same one again. A
    placeholder's, which nothing else logs, is warned of here, once per channel."""
    caplog.set_level(logging.DEBUG, logger="platforms.slack")
    fake.fail_next("chat.postMessage", "internal_error", status=500, times=3)
    for chat in ("C1", "C2", "C3"):
        with pytest.raises(NetworkError):
            await slack.send(Outbound(chat_id=chat, thread_id=None, text="x"))
    fake.fail_next("chat.postMessage", "channel_not_found", status=200, times=2)
    for chat in ("C4", "C5"):
        with pytest.raises(NotFound):
            await slack.send(Outbound(chat_id=chat, thread_id=None, text="x"))
    fake.fail_next("chat.postMessage", "channel_not_found", status=200, times=3)
    for chat in ("C6", "C7", "C6"):
        await slack.typing(chat, None)
        await slack.idle(chat, None)
    logged = [(r.levelno, r.getMessage()) for r in caplog.records if " failed (channel " in r.getMessage()]
    assert logged == [(logging.WARNING, "slack chat.postMessage failed (channel C1): internal_error, HTTP 500"),
                      (logging.DEBUG, "slack chat.postMessage failed (channel C4): channel_not_found, HTTP 200"),
                      (logging.DEBUG, "slack chat.postMessage failed (channel C5): channel_not_found, HTTP 200"),
                      (logging.WARNING, "slack chat.postMessage failed (channel C6): channel_not_found, HTTP 200"),
                      (logging.WARNING, "slack chat.postMessage failed (channel C7): channel_not_found, HTTP 200")]


# -- progress placeholder ------------------------------------------------------------------


async def test_typing_posts_one_placeholder_and_idle_removes_it(fake: FakeSlack, slack: SlackAdapter) -> None:
    await slack.typing("C1", "1.5")
    await slack.typing("C1", "1.5")
    await slack.typing("DU1", None)
    assert texts(fake, "C1", "1.5") == [PLACEHOLDER] and texts(fake, "DU1") == [PLACEHOLDER]
    await slack.send(Outbound(chat_id="C1", thread_id="1.5", text="the answer"))
    await slack.idle("C1", "1.5")
    await slack.idle("DU1", None)
    await slack.idle("DU1", None)  # nothing left: a no-op
    assert texts(fake, "C1", "1.5") == ["the answer"] and texts(fake, "DU1") == []
    assert len(fake.calls_to("chat.delete")) == 2


async def test_idle_during_placeholder_post_still_removes_it(fake: FakeSlack, slack: SlackAdapter) -> None:
    typing = asyncio.ensure_future(slack.typing("C1", "2.5"))
    await fake.wait_for(lambda: bool(fake.calls_to("chat.postMessage")))
    typing.cancel()  # the gateway's typing loop is cancelled mid-post
    await slack.idle("C1", "2.5")
    await asyncio.gather(typing, return_exceptions=True)
    assert texts(fake, "C1", "2.5") == []


async def test_a_placeholder_waits_for_its_turn_and_one_still_waiting_when_the_turn_ends_is_never_posted(
        fake: FakeSlack, slack: SlackAdapter) -> None:
    asked, turn = [], asyncio.Event()

    async def wait_turn(chat_id: str) -> None:  # the outbox's pacing of the channel (`bind_turns`)
        asked.append(chat_id)
        await turn.wait()

    slack.bind_turns(wait_turn)
    typing = asyncio.ensure_future(slack.typing("C1", "3.5"))
    await fake.wait_for(lambda: asked == ["C1"])
    assert fake.calls_to("chat.postMessage") == []  # not before its turn
    await slack.idle("C1", "3.5")  # the turn ended first: its answer need not wait behind a placeholder
    await typing
    turn.set()
    await slack.typing("C1", "4.5")
    assert texts(fake, "C1", "4.5") == [PLACEHOLDER] and texts(fake, "C1", "3.5") == []
    assert [c.params["thread_ts"] for c in fake.calls_to("chat.postMessage")] == ["4.5"]


async def test_failed_placeholder_post_is_tried_again(fake: FakeSlack, slack: SlackAdapter) -> None:
    fake.fail_next("chat.postMessage", status=429, retry_after=1)
    await slack.typing("C1", None)  # swallowed: a progress display never fails a turn
    await slack.typing("C1", None)
    assert texts(fake, "C1") == [PLACEHOLDER]
    await slack.idle("C1", None)
    assert texts(fake, "C1") == []


@pytest.mark.parametrize("lost", ["internal_error", "dropped"])
async def test_a_placeholder_whose_post_lost_its_answer_is_deleted_when_the_turn_ends(
        fake: FakeSlack, slack: SlackAdapter, lost: str) -> None:
    left: list[tuple[str, str | None]] = []
    slack.bind_indicators_left(lambda chat_id, thread_id: left.append((chat_id, thread_id)))
    thread = (await slack.send(Outbound("C1", None, "the mention"))).message_id
    # Posted, but the answer is a 500 or never comes: the adapter cannot know its ts.
    fake.fail_next("chat.postMessage", lost, status=500, after=True, drop=lost == "dropped")
    await slack.typing("C1", thread)
    assert texts(fake, "C1", thread) == [PLACEHOLDER]
    assert left == [("C1", thread)]  # should the process die before the turn ends, the next start looks there
    await slack.typing("C1", thread)  # the refresh posts the placeholder again
    assert texts(fake, "C1", thread) == [PLACEHOLDER, PLACEHOLDER]
    await slack.send(Outbound("C1", thread, "the answer"))
    await slack.idle("C1", thread)
    assert texts(fake, "C1", thread) == ["the answer"]


async def test_a_placeholder_post_refused_for_sure_reads_nothing_back(fake: FakeSlack, slack: SlackAdapter) -> None:
    fake.fail_next("chat.postMessage", "not_in_channel")
    await slack.typing("C1", None)
    await slack.idle("C1", None)
    assert fake.calls_to("conversations.history") == []


async def test_rate_limited_delete_is_retried(fake: FakeSlack, slack: SlackAdapter) -> None:
    await slack.typing("C1", None)
    fake.fail_next("chat.delete", status=429, retry_after=0)
    await slack.idle("C1", None)
    await fake.wait_for(lambda: texts(fake, "C1") == [])
    assert len(fake.calls_to("chat.delete")) == 2


async def test_a_placeholder_whose_deletion_slack_refused_for_the_token_goes_once_it_takes_the_token_again(
        fake: FakeSlack, slack: SlackAdapter) -> None:
    await slack.typing("C1", None)
    fake.bot_token_revoked = True  # the app uninstalled mid-turn
    await slack.idle("C1", None)
    assert texts(fake, "C1") == [PLACEHOLDER]  # refused: still there, as is every reply meanwhile (held)
    fake.bot_token_revoked = False  # reinstalled with the same token (or rotated back)
    await slack.send(Outbound(chat_id="C1", thread_id=None, text="the answer"))  # the outbox's held reply
    await fake.wait_for(lambda: texts(fake, "C1") == ["the answer"])


async def test_stop_removes_placeholders_left_behind(fake: FakeSlack, sink: Recorder) -> None:
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
    await adapter.start(sink)
    await adapter.typing("C1", "3.5")
    await adapter.stop()
    await adapter.stop()  # idempotent
    assert texts(fake, "C1", "3.5") == []
    assert fake.open_connections == []
    with pytest.raises(NetworkError):
        await adapter.send(Outbound(chat_id="C1", thread_id=None, text="too late"))
    await adapter.typing("C1", None)  # after stop: does nothing


async def test_send_before_start_is_a_network_error() -> None:
    adapter = SlackAdapter(bot_token="xoxb-1", app_token="xapp-1")
    with pytest.raises(NetworkError):
        await adapter.send(Outbound(chat_id="C1", thread_id=None, text="x"))



async def test_find_sent_finds_a_post_by_its_idempotency_key_in_the_channel_and_in_a_thread(slack, fake):
    since = time.time()
    top = await slack.send(Outbound("C1", None, "top level", idempotency_key="t1:reply:0"))
    parent = await slack.send(Outbound("C1", None, "parent", idempotency_key="t0:reply:0"))
    reply = await slack.send(Outbound("C1", parent.message_id, "in the thread", idempotency_key="t2:reply:0"))
    assert await slack.find_sent(Outbound("C1", None, "top level", idempotency_key="t1:reply:0"), since) == \
        top.message_id
    assert await slack.find_sent(Outbound("C1", parent.message_id, "x", idempotency_key="t2:reply:0"), since) == \
        reply.message_id
    assert await slack.find_sent(Outbound("C1", None, "x", idempotency_key="never-sent:0"), since) is None
    # Nothing to look up without a key, nor for a slash command's answer: the outbox sends those unasked.
    assert await slack.find_sent(Outbound("C1", None, "x"), since) is None
    assert await slack.find_sent(Outbound("C1", None, "x", idempotency_key="t1:reply:0", reply_token="{}"),
                                 since) is None
    assert not slack.findable(Outbound("C1", None, "x"))
    assert not slack.findable(Outbound("C1", None, "x", idempotency_key="t1:reply:0", reply_token="{}"))
    assert slack.findable(Outbound("C1", "1.2", "x", idempotency_key="t1:reply:0"))
    history = fake.calls_to("conversations.history")
    assert len(history) == 2 and history[0].params["include_all_metadata"] in ("1", "true", True)
    assert fake.calls_to("conversations.replies")[0].params["ts"] == parent.message_id


async def test_find_sent_reads_further_pages_up_to_its_bound(slack, fake, monkeypatch):
    monkeypatch.setattr(slack_history, "LOOKUP_LIMIT", 2)
    since = time.time()
    first = await slack.send(Outbound("C1", None, "first", idempotency_key="t1:0"))
    for i in range(2 * slack_history.LOOKUP_PAGES - 1):  # `first` ends up last on the last page read
        await slack.send(Outbound("C1", None, f"later {i}", idempotency_key=f"t{i + 2}:0"))
    assert await slack.find_sent(Outbound("C1", None, "x", idempotency_key="t1:0"), since) == first.message_id
    pages = fake.calls_to("conversations.history")
    assert len(pages) == slack_history.LOOKUP_PAGES
    assert [p.params.get("cursor") for p in pages[1:]] == [str(2 * n) for n in range(1, slack_history.LOOKUP_PAGES)]
    await slack.send(Outbound("C1", None, "one more", idempotency_key="t0:0"))  # pushes `first` past the bound
    assert await slack.find_sent(Outbound("C1", None, "x", idempotency_key="t1:0"), since) is None
    assert len(fake.calls_to("conversations.history")) == 2 * slack_history.LOOKUP_PAGES


async def test_placeholders_left_at_the_end_of_a_long_thread_are_found(fake, slack, sink, monkeypatch):
    monkeypatch.setattr(slack_history, "LOOKUP_LIMIT", 2)
    parent = await slack.send(Outbound("C1", None, "parent"))
    for i in range(4):
        await slack.send(Outbound("C1", parent.message_id, f"reply {i}"))
    earlier = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
    await earlier.start(sink, COMMANDS)
    try:
        await earlier.typing("C1", parent.message_id)  # the placeholder a killed process left
    finally:
        earlier._progress._placeholders.clear()  # it died: it deletes nothing on its way out
        await earlier.stop()
    assert texts(fake, "C1", parent.message_id)[-1] == PLACEHOLDER
    assert await slack.clear_left_behind("C1", parent.message_id) == 1
    assert PLACEHOLDER not in texts(fake, "C1", parent.message_id)
    assert len(fake.calls_to("conversations.replies")) == 3  # parent + 5 messages, two a page


async def test_find_sent_raises_a_delivery_error_when_slack_cannot_tell(slack, fake):
    fake.fail_next("conversations.history", "missing_scope")
    with pytest.raises(Forbidden):
        await slack.find_sent(Outbound("C1", None, "x", idempotency_key="k:0"), time.time())


async def test_metadata_slack_refuses_is_dropped_once_and_posting_goes_on(slack, fake, caplog):
    fake.fail_next("chat.postMessage", "invalid_metadata_format")
    with caplog.at_level(logging.WARNING, logger="platforms.slack"):
        first = await slack.send(Outbound("C1", None, "first", idempotency_key="t1:0"))
    second = await slack.send(Outbound("C1", None, "second", idempotency_key="t2:0"))
    posts = fake.calls_to("chat.postMessage")
    assert "metadata" in posts[0].params and all("metadata" not in p.params for p in posts[1:])
    assert [m["ts"] for m in fake.messages[("C1", None)]] == [first.message_id, second.message_id]
    assert sum("refused message metadata" in r.getMessage() for r in caplog.records) == 1


async def test_a_mention_keeps_the_lines_and_indentation_of_the_message(
    fake: FakeSlack, slack: SlackAdapter, sink: Recorder
) -> None:
    code = "```\ndef f():\n    return 1\n```"
    await fake.push_mention("C1", "U1", f"<@UBOT> why does this fail?\n{code}")
    await fake.push_mention("C1", "U1", f"look  at this:\n{code}\n<@UBOT>")
    await fake.wait_for(lambda: len(sink.items) == 2)
    assert {i.text for i in sink.items} == {f"why does this fail?\n{code}", f"look  at this:\n{code}"}


async def test_bang_commands_with_arguments_or_capitals_pass_in_an_unknown_thread(
    fake: FakeSlack, slack: SlackAdapter, sink: Recorder
) -> None:
    # The gateway reads "!new plan the trip" and "!Stop" (a phone's capital) as commands; so must the adapter.
    thread = "1700000000.000007"
    for text in ("!new plan the trip", "!Stop", "!agents  all", "!newer things", "! stop", "!RESET now"):
        await fake.push_message("C1", "U1", text, thread_ts=thread)
    await settled(fake)
    assert sorted(i.text for i in sink.items) == ["!RESET now", "!Stop", "!agents  all", "!new plan the trip"]


async def test_slack_escapes_in_user_text_reach_the_model_as_the_characters_typed(
    fake: FakeSlack, slack: SlackAdapter, sink: Recorder
) -> None:
    # Slack sends "&", "<" and ">" typed by a user as &amp;, &lt; and &gt; ("&lt;" typed as "&amp;lt;").
    await fake.push_dm("U1", "is `a &lt; b &amp;&amp; c &gt; d` true? &amp;lt; is an entity")
    await fake.push_mention("C1", "U1", "R&amp;D: &lt;@UBOT&gt; is not a mention")
    await fake.wait_for(lambda: len(sink.items) == 2)
    assert {i.text for i in sink.items} == {"is `a < b && c > d` true? &lt; is an entity",
                                           "R&D: <@UBOT> is not a mention"}


async def test_links_channels_and_mentions_reach_the_model_as_slack_shows_them(
    fake: FakeSlack, slack: SlackAdapter, sink: Recorder
) -> None:
    # Slack writes them between < and >, with the name it shows after a "|"; raw, the model saw
    # channel ids and took "http://example.com|example.com" for an address.
    await fake.push_dm("U1", "read <https://example.com/a?b=1&amp;c=2|the docs &amp; more>, "
                             "<http://example.com|example.com>, <https://example.com/x> and "
                             "<mailto:ada@example.com|ada@example.com>")
    await fake.push_dm("U2", "ask <!subteam^S0123|@devs> in <#C0123|general> (not <#C0456>), "
                             "<!here> <!channel> <!everyone>, <@U0789> by <!date^1392734382^{date}|Feb 18, 2014>")
    await fake.wait_for(lambda: len(sink.items) == 2)
    assert {i.user_id: i.text for i in sink.items} == {
        "U1": "read [the docs & more](https://example.com/a?b=1&c=2), example.com, https://example.com/x and "
              "ada@example.com",
        "U2": "ask @devs in #general (not <#C0456>), @here @channel @everyone, <@U0789> by Feb 18, 2014",
    }


async def test_a_forwarded_message_reaches_the_model_with_the_comment_typed_with_it(
    fake: FakeSlack, slack: SlackAdapter, sink: Recorder
) -> None:
    # Slack puts a forwarded (shared) message in the new message's attachments, never in its text:
    # the model got only "what do you make of this?", or an empty message for a bare forward.
    incident = fake.shared_message("C0INC", "U7", "db01 is down &amp; <#C0OPS|ops> paged\n"
                                   "see <https://status.example.com|status>", author="Grace", channel_name="incidents")
    await fake.push_message("DU1", "U1", "what do you make of this?", channel_type="im", attachments=[incident])
    await fake.push_message("DU2", "U2", "", channel_type="im",
                            attachments=[fake.shared_message("DU9", "U9", "lunch?", author="Alan")])
    await fake.wait_for(lambda: len(sink.items) == 2)
    assert {i.user_id: i.text for i in sink.items} == {
        "U1": "what do you make of this?\n\nForwarded message from Grace in #incidents:\n"
              "> db01 is down & #ops paged\n> see [status](https://status.example.com)",
        "U2": "Forwarded message from Alan:\n> lunch?",
    }


async def test_a_command_the_store_refuses_until_a_stop_is_answered_to_send_it_again(
        fake: FakeSlack, caplog: pytest.LogCaptureFixture) -> None:
    # Acked at once (Slack's 3 s), so Slack never sends it again, and no history keeps a command to
    # read back: a store refusing it until the stop left the user with no answer at all.
    tries = 0

    async def refusing(inbound: Inbound) -> None:
        nonlocal tries
        tries += 1
        raise full_disk()

    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2)
    await adapter.start(refusing, COMMANDS)
    try:
        await fake.push_slash_command("/new", "U1", "DU1", "please")
        await fake.wait_for(lambda: tries >= 2)  # handed over again: the store may find room
    finally:
        await adapter.stop()
    assert [e["text"] for e in fake.ephemeral] == ["⚠️ Not taken: the bot is restarting. Send `/new` again in a minute."]
    assert "slack: /new from user U1 was not recorded before the gateway stopped; telling the user to send it again" \
        in caplog.messages


async def test_a_message_still_being_read_at_a_stop_is_not_handed_over_during_or_after_it(
        fake: FakeSlack, sink: Recorder) -> None:
    # Socket Mode runs listeners as tasks it forgets: one awaiting files.info when the stop began reached
    # the sink later, on a hand-over task started after the stop had cancelled its own, never cancelled.
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2)
    await adapter.start(sink, COMMANDS)
    await adapter.typing("C1", None)  # a placeholder the stop deletes: held, it holds the stop midway
    described = fake.hold("files.info")
    await fake.push_file("DU1", "U1", b"x", "notes.txt", text="read this", connect=True)
    await fake.wait_for(lambda: fake.calls_to("files.info"))
    deleting = fake.hold("chat.delete")
    stopping = asyncio.create_task(adapter.stop())
    try:
        await fake.wait_for(lambda: fake.calls_to("chat.delete"))
        described.set()
        with pytest.raises(TimeoutError):  # runs out only where the listener no longer runs
            await fake.wait_for(lambda: sink.items, timeout=1.0)
    finally:
        deleting.set()
        await stopping
    assert sink.items == []


async def test_a_command_coming_in_during_a_stop_is_answered_to_send_it_again(fake: FakeSlack, sink: Recorder) -> None:
    # It reached the sink on a task started after the stop had cancelled its own: a gateway stopping
    # took it, or the stop cut it off unrecorded, and the user had no "send it again" either way.
    async with stopping_midway(fake, sink):
        await fake.push_slash_command("/new", "U1", "DU1")
    assert sink.items == []
    assert [e["text"] for e in fake.ephemeral] == ["⚠️ Not taken: the bot is restarting. Send `/new` again in a minute."]
