"""A secret read through ``${VAR}`` from a file keeps the file's last line break (a Kubernetes secret made with
``--from-file``, ``token: |``). Where nothing can send or sign with it so, it is a configuration error naming its
key, as for a webhook route's secret, never showing the secret: the web chat's and the console's token (every
request refused 401: a header's ends are trimmed), Slack's signing secret (every event refused), its app token
(Socket Mode's start failing on "Forbidden control character detected in headers"), its bot token (every shared
file's download failing so) and Temporal's API key (not sent at all). A Discord token is stripped by discord.py."""

from __future__ import annotations

import io

import pytest

from gateway.config import ConfigError, config_check, config_from_mapping

SECRET = "s3cr3t-value-0123456789"
SLACK = {"enabled": True, "allow_all": True, "bot_token": "xoxb-123-abcdefgh", "app_token": "xapp-1-abcdefgh"}

CASES = {
    "platforms.web.token": ({"platforms": {"web": {"enabled": True, "token": "${V}"}}}, SECRET),
    "server.console_token": ({"server": {"console_token": "${V}"}}, SECRET),
    "server.console_token (console off: /metrics)": ({"server": {"console": False, "console_token": "${V}"}}, SECRET),
    "platforms.slack.signing_secret": (
        {"platforms": {"slack": {**SLACK, "mode": "http", "signing_secret": "${V}"}}}, SECRET),
    "platforms.slack.app_token": ({"platforms": {"slack": {**SLACK, "app_token": "${V}"}}}, "xapp-1-" + SECRET),
    "platforms.slack.bot_token": ({"platforms": {"slack": {**SLACK, "bot_token": "${V}"}}}, "xoxb-1-" + SECRET),
    "lifecycle.temporal.api_key": ({"lifecycle": {"temporal": {"api_key": "${V}"}}}, SECRET),
}


@pytest.mark.parametrize("key", list(CASES))
@pytest.mark.parametrize("around", ["{}\n", "{}\r\n", "{} ", "\t{}"], ids=["lf", "crlf", "space", "tab"])
def test_a_secret_with_whitespace_at_an_end_is_an_error_naming_its_key_not_the_secret(key: str, around: str) -> None:
    raw, value = CASES[key]
    with pytest.raises(ConfigError) as refused:
        config_from_mapping(raw, env={"V": around.format(value)})
    assert f"{key.partition(' ')[0]}: {'starts' if around.startswith(chr(9)) else 'ends'} with" in str(refused.value)
    assert SECRET not in str(refused.value)


@pytest.mark.parametrize("key", list(CASES))
def test_the_same_secret_without_it_is_taken(key: str) -> None:
    raw, value = CASES[key]
    config_from_mapping(raw, env={"V": value})


def test_a_discord_token_with_its_line_break_is_still_taken() -> None:
    # discord.py strips a token's ends: it works, so it is no error.
    raw = {"platforms": {"discord": {"enabled": True, "allow_all": True, "token": "${V}"}}}
    config_from_mapping(raw, env={"V": "MTIzNDU2.abcdef.ghijkl\n"})


def test_config_check_names_the_key_and_never_shows_the_secret(write) -> None:
    path = write("platforms:\n  web: {enabled: true, token: '${WEB_TOKEN}'}\n"
                 "  webhook: {enabled: true, routes: {alerts: {secret: '${HOOK}'}}}\n")
    out, err = io.StringIO(), io.StringIO()
    assert config_check(str(path), out, err, env={"WEB_TOKEN": SECRET + "\n", "HOOK": "hook-" + SECRET + "\n"}) != 0
    assert "platforms.web.token: ends with a line break" in err.getvalue()
    assert "platforms.webhook.routes.alerts.secret: ends with a line break" in err.getvalue()
    assert SECRET not in out.getvalue() + err.getvalue()
