"""Slack's start that reaches no Web API says which host it could not reach and why, as Telegram's and Discord's
lines do: it read ``(auth.test: ClientConnectorDNSError)``, and its warning ``slack auth.test failed (channel
None): ClientConnectorError, HTTP None``, fields that name nothing. Never a token, nor a proxy's address."""

from __future__ import annotations

import logging
import socket

import aiohttp
import pytest
from yarl import URL

from gateway.config import config_from_mapping
from gateway.startup_errors import explain
from platforms.base import NetworkError
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_errors import translate_exception
from tests.platforms.sink import Sink

BOT, APP = "xoxb-1-2-unreached", "xapp-1-2-unreached"
FIX = "; fix platforms.slack.api_base, or the network or proxy between"


def unused_port() -> int:
    """A loopback port nothing listens on: a connection there is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def failed_start(api_base: str) -> NetworkError:
    adapter = SlackAdapter(bot_token=BOT, app_token=APP, api_base=api_base, call_timeout=5.0)
    try:
        with pytest.raises(NetworkError) as failed:
            await adapter.start(Sink(), [])
    finally:
        await adapter.stop()
    return failed.value


def start_line(exc: BaseException, api_base: str) -> str:
    settings = {"enabled": True, "allow_all": True, "bot_token": BOT, "app_token": APP, "api_base": api_base}
    return explain(exc, config_from_mapping({"platforms": {"slack": settings}}).config)


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "platforms.slack" and r.levelno >= logging.WARNING]


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


async def test_a_start_with_nothing_at_api_base_names_the_host_and_why(caplog: pytest.LogCaptureFixture) -> None:
    port = unused_port()
    api_base = f"http://127.0.0.1:{port}/api/"
    exc = await failed_start(api_base)
    said = f"ClientConnectorError: Cannot connect to host 127.0.0.1:{port} ssl:default ["
    assert str(exc).startswith(f"auth.test: {said}"), str(exc)
    line = start_line(exc, api_base)
    assert line.startswith(f"platforms.slack.api_base: no working Slack Web API at {api_base} (auth.test: {said}")
    assert line.endswith(f"]){FIX}"), line
    [warned] = warnings_of(caplog)
    assert warned.startswith(f"slack auth.test failed: {said}"), warned
    for text in (line, warned):
        assert "None" not in text and BOT not in text and APP not in text


async def test_a_start_answered_with_a_5xx_page_logs_no_empty_fields(caplog: pytest.LogCaptureFixture) -> None:
    async with FakeSlack(bot_token=BOT, app_token=APP) as slack:
        slack.fail_next("auth.test", status=503, body="<html><h1>503 Service Unavailable</h1></html>")
        exc = await failed_start(slack.api_base)
    assert str(exc) == "auth.test: HTTP 503"
    assert warnings_of(caplog) == ["slack auth.test failed: HTTP 503"]


async def test_a_proxy_that_cannot_be_reached_is_named_without_its_address(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("https_proxy", f"http://proxyuser:pr0xy-pass@127.0.0.1:{unused_port()}")
    exc = await failed_start("https://slack.invalid/api/")
    said = ("ClientProxyConnectionError: the proxy $https_proxy or $http_proxy names cannot be reached:"
            " connection refused")
    assert str(exc) == f"auth.test: {said}"
    assert warnings_of(caplog) == [f"slack auth.test failed: {said}"]
    for secret in ("pr0xy-pass", "proxyuser", "127.0.0.1"):
        assert secret not in str(exc) and secret not in "\n".join(r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("url", [
    "https://files.slack.com/upload/v1/CwABAAAAXAoAAZnKgSECRETcapability0123456789",  # the URL is the credential
    "https://hooks.slack.com/commands/T0001/1234567890/aBcDeFgHiJkLmNoPqRsTuVwX",  # a command's response_url
])
def test_a_body_not_written_is_named_by_its_origin_not_its_url(url: str, caplog: pytest.LogCaptureFixture) -> None:
    # What aiohttp's write_bytes raises when the connection closes under a body (a proxy's upload limit, a
    # keep-alive connection the server closed): an OSError whose text quotes the URL.
    exc = aiohttp.ClientOSError(None, f"Can not write request body for {URL(url)!s}")
    error = translate_exception(exc, "files.upload_v2", "C1")
    origin = url.split("/")[2]
    assert str(error) == f"files.upload_v2: ClientOSError: [Errno None] Can not write request body for https://{origin}"
    assert warnings_of(caplog) == [f"slack files.upload_v2 failed (channel C1): {str(error).partition(': ')[2]}"]
