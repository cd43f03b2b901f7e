"""The log an operator reads at INFO under `switchboard run`: what the start says, no line per model call, a
failed turn's line carrying its session and turn, and a reply lost for good as an ERROR."""

from __future__ import annotations

import io
import json
import logging

import pytest

from agent import ModelRequest
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer
from gateway.logging import logging_installed
from gateway.serve import served
from gateway.testing import RecordingAdapter, make_config, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter

HELLO = ModelRequest(messages=[{"role": "user", "content": "hi"}])


async def test_a_model_call_writes_no_line_at_info_nor_does_its_retry():
    at_info, at_debug = io.StringIO(), io.StringIO()
    async with FakeOpenAIServer() as server:
        model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="k-1",
                                          max_retries=1), env={})
        try:
            for level, stream in (("INFO", at_info), ("DEBUG", at_debug)):
                server.push_error(500, headers={"retry-after": "0.01"})
                with logging_installed(level, stream=stream, repeat_window=0):
                    assert (await model.complete(HELLO)).text == "ok"
        finally:
            await model.aclose()
    assert "HTTP Request: POST" not in at_info.getvalue() and "Retrying request" not in at_info.getvalue()
    assert "HTTP Request: POST" in at_debug.getvalue() and "Retrying request" in at_debug.getvalue()
    assert logging.getLogger("httpx2").level == logging.getLogger("httpx").level == logging.NOTSET  # restored


def test_the_start_names_the_metrics_and_health_urls(tmp_path):
    lines = served(make_config(tmp_path), "127.0.0.1", 8080, ["telegram"])
    assert lines == ["operator console at http://127.0.0.1:8080/console",
                     "metrics at http://127.0.0.1:8080/metrics, health at http://127.0.0.1:8080/healthz"]


async def test_the_start_names_the_version_the_state_and_the_model(tmp_path, caplog):
    config = make_config(tmp_path, model={"provider": "demo", "name": "demo-7"})
    with caplog.at_level(logging.INFO, logger="gateway.host"):
        gateway = await start_gateway(config, [RecordingAdapter()])
        await gateway.stop(grace=0)
    line = next(r.getMessage() for r in caplog.records if "state in" in r.getMessage())
    assert line.startswith("switchboard 0.") and f"state in {config.state_dir}," in line
    assert line.endswith("model demo-7 (demo)")


@pytest.fixture
async def telegram():
    async with FakeTelegram() as fake:
        yield fake


async def chat_once(tmp_path, fake: FakeTelegram, model: dict, stream: io.StringIO, text: str = "hi") -> None:
    """One message from chat 41 answered (or apologised for) through the Telegram adapter, logged in JSON."""
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}}, model=model)
    with logging_installed("WARNING", "json", stream=stream, repeat_window=0):
        gateway = await start_gateway(config, [TelegramAdapter(fake.token, api_base=fake.base_url,
                                                               polling_timeout=10)])
        try:
            fake.push_message(41, text)
            await fake.wait_for(lambda: fake.calls_to("sendMessage"))
            await fake.wait_for(lambda: '"outbox' in stream.getvalue() or fake.messages["41"])
        finally:
            await gateway.stop(grace=1)


async def test_a_turn_whose_model_failed_is_logged_with_its_session_and_turn(tmp_path, telegram):
    stream = io.StringIO()
    async with FakeOpenAIServer() as server:
        server.push_error(500)
        await chat_once(tmp_path, telegram, {"provider": "openai", "name": "m", "base_url": server.base_url,
                                             "api_key": "k-1", "max_retries": 0}, stream)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    ended = [e for e in lines if "ended early" in e["msg"]]
    assert len(ended) == 1 and ended[0]["level"] == "WARNING"
    assert ended[0]["session_id"].startswith("s-") and ended[0]["msg"].startswith(f"turn {ended[0]['turn_id']} ")


@pytest.mark.parametrize(("status", "description", "level"), [
    (400, "Bad Request: message text is empty", "ERROR"),  # the answer is lost: the operator should look
    (403, "Forbidden: bot was blocked by the user", "WARNING"),  # the chat's own choice
])
async def test_a_reply_lost_for_good_is_an_error_and_a_chats_refusal_a_warning(tmp_path, telegram, status,
                                                                                description, level):
    stream = io.StringIO()
    telegram.fail_next("sendMessage", status=status, description=description)
    await chat_once(tmp_path, telegram, {"provider": "demo"}, stream)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    failed = [e for e in lines if e["logger"] == "gateway.outbox" and ":reply:0 failed" in e["msg"]]
    assert [e["level"] for e in failed] == [level]
    assert "telegram chat 41:" in failed[0]["msg"] and description in failed[0]["msg"]
