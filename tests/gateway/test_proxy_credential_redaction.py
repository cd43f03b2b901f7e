"""The user and password of a proxy the environment names (``$https_proxy``, ``$HTTP_PROXY``, ``$all_proxy``…)
are masked in the log, as the credentials of ``$OPENAI_BASE_URL`` are: slack-sdk logs the proxy URL it took from
the environment at DEBUG, and aiohttp's text of a proxy's refusal, in a reconnect's traceback, quotes it."""

from __future__ import annotations

import io
import logging

import pytest
from slack_sdk.webhook.async_client import AsyncWebhookClient

from gateway.config import config_secrets, load_config
from gateway.config.secret_values import env_secret_values
from gateway.logging import logging_installed


def test_a_proxys_password_is_masked_in_a_debug_line(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxyuser:pr0xy-s3cret-f1@127.0.0.1:3128")
    (tmp_path / "switchboard.yaml").write_text("", encoding="utf-8")
    config, _ = load_config(tmp_path / "switchboard.yaml", env={})
    stream = io.StringIO()
    with logging_installed("DEBUG", stream=stream, secrets=config_secrets(config), repeat_window=0):
        AsyncWebhookClient("http://127.0.0.1:9/hook")  # given no proxy, slack-sdk reads $HTTPS_PROXY and says so
        logging.getLogger("discord.client").debug("reconnecting: 407, url='http://proxyuser:pr0xy-s3cret-f1@proxy'")
    out = stream.getvalue()
    assert "HTTP proxy URL has been loaded from an env variable: http://proxyuser:***@127.0.0.1:3128" in out
    assert "pr0xy-s3cret" not in out


def test_every_proxy_variables_credentials_are_secrets_and_no_proxy_is_none() -> None:
    env = {"https_proxy": "http://u:pr0xy%2Fpass-g1@proxy:3128", "ALL_PROXY": "socks5://tk-user-alone-g2@proxy:1080",
           "http_proxy": "bare:pass-without-scheme-g3@proxy:3128", "no_proxy": "http://x:not-a-proxy-g4@host"}
    assert env_secret_values(env) == {"pr0xy%2Fpass-g1", "pr0xy/pass-g1", "tk-user-alone-g2", "pass-without-scheme-g3"}
