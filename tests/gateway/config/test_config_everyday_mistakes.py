"""Everyday operator mistakes that `config check` passed and every start (or every turn) then failed
on, with words pointing elsewhere: each is one error naming its key and the fix, and no secret."""

from __future__ import annotations

import asyncio

import pytest

from agent.settings import ModelSettings
from agent.testing.fake_openai import FakeOpenAIServer
from gateway.cli import EXIT_CONFIG
from gateway.config import ConfigError
from gateway.errors import StartupError
from gateway.preflight import check_model
from platforms.fakes.discord import FakeDiscord
from tests.gateway.cli_process import problem_lines, run, write_config

DISCORD = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhIjKl.abcdefghijklmnopqrstuvwxyz0123"


def errors_of(load, text: str, env=None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load(text, env)
    return info.value.errors


@pytest.mark.parametrize(("token", "error"), [
    (f"Bot {DISCORD}", 'platforms.discord.token: write the token alone, without "Bot " in front: the gateway adds it'),
    (f"bot {DISCORD}", 'platforms.discord.token: write the token alone, without "Bot " in front: the gateway adds it'),
    (f"{DISCORD[:30]} {DISCORD[30:]}",
     "platforms.discord.token: expected the token alone, as the Developer Portal gives it: a Discord token holds"
     " no space"),
], ids=["Bot prefix", "bot prefix", "space inside"])
def test_a_discord_token_discord_would_refuse_is_an_error_without_the_token(load, token, error):
    # Else the start fails on a 401 that it words as a token reset in the Developer Portal.
    errors = errors_of(load, "platforms:\n  discord: {enabled: true, allow_all: true, token: '${DISCORD_TOKEN}'}\n",
                       {"DISCORD_TOKEN": token})
    assert errors == [error]
    assert not any(DISCORD[:12] in e for e in errors)


def test_a_discord_token_read_with_its_line_break_is_fine(load):
    # `token: |` or a file's last line: discord.py strips the token's ends.
    config, _ = load(f"platforms:\n  discord:\n    enabled: true\n    allow_all: true\n    token: |\n      {DISCORD}\n")
    assert config.platforms.discord.token == DISCORD + "\n"


BOT_SWAPPED = ("platforms.slack.bot_token: holds an app-level token (xapp-…), which goes in platforms.slack.app_token;"
               " the bot token is the Bot User OAuth Token (xoxb-…)")
APP_SWAPPED = ("platforms.slack.app_token: holds an OAuth token (xox…), which goes in platforms.slack.bot_token;"
               " Socket Mode needs the App-Level Token (xapp-…)")


@pytest.mark.parametrize(("bot", "app", "expected"), [
    ("xapp-1-A0-42-secretpart", "xoxb-42-43-secretpart", [BOT_SWAPPED, APP_SWAPPED]),
    ("xapp-1-A0-42-secretpart", "xapp-1-A0-42-secretpart", [BOT_SWAPPED]),
    ("xoxb-42-43-secretpart", "xoxb-42-43-secretpart", [APP_SWAPPED]),
], ids=["swapped", "app token twice", "bot token twice"])
def test_slack_tokens_in_each_others_keys_are_errors_naming_both_keys(load, bot, app, expected):
    errors = errors_of(load, f"platforms:\n  slack: {{enabled: true, allow_all: true, bot_token: {bot},"
                             f" app_token: {app}}}\n")
    assert errors == expected
    assert not any("secretpart" in e for e in errors)


def test_slack_tokens_in_their_own_keys_are_fine(load):
    load("platforms:\n  slack: {enabled: true, allow_all: true, bot_token: xoxb-1-2, app_token: xapp-1-2}\n")
    # HTTP mode reads no app token: whatever is left there stops nothing.
    load("platforms:\n  slack: {enabled: true, allow_all: true, mode: http, bot_token: xoxb-1, signing_secret: s,"
         " app_token: xoxb-1}\n")


def test_a_telegram_token_copied_from_a_bot_api_url_says_to_drop_the_bot(load):
    errors = errors_of(load, "platforms:\n  telegram: {enabled: true, allow_all: true, token: bot777002:AAE-sec}\n")
    assert errors == ['platforms.telegram.token: expected the token @BotFather gave, such as 123456789:AAE…, without'
                      ' the "bot" the Bot API\'s URLs put in front of it']


HOOKED = "platforms:\n  telegram: {enabled: true, allow_all: true, token: '777002:AAE-x', mode: webhook, "


@pytest.mark.parametrize(("url", "error"), [
    ("http://bot.example.com/tg",
     "expected an https URL: the Telegram Bot API posts updates to no other (put a reverse proxy with a TLS"
     " certificate in front of server.port, and give its https:// address)"),
    ("https://bot.example.com:8080/tg",
     "expected port 443, 80, 88 or 8443, got 8080: the Telegram Bot API posts updates to no other (let the reverse"
     " proxy listen on one of them, in front of server.port)"),
], ids=["http", "port 8080"])
def test_a_webhook_url_telegram_would_refuse_is_an_error_naming_it(load, url, error):
    # Else every start fails on setWebhook's Bad Request, and says to check the token and api_base.
    errors = errors_of(load, HOOKED + f"webhook_url: '{url}'}}\n")
    assert errors == [f"platforms.telegram.webhook_url: {error}"]


@pytest.mark.parametrize(("url", "api_base"), [
    ("https://bot.example.com/tg", "https://api.telegram.org"),
    ("https://bot.example.com:8443/tg", "https://api.telegram.org/"),
    ("http://10.0.0.5:8080/tg", "http://127.0.0.1:8081"),  # a local Bot API server takes http and any port
])
def test_webhook_urls_the_bot_api_takes_are_fine(load, url, api_base):
    load(HOOKED + f"webhook_url: '{url}', api_base: '{api_base}'}}\n")


@pytest.mark.parametrize(("key", "yaml_key", "suffix"), [
    ("model.base_url", "model: {provider: openai, base_url: %s}", "/chat/completions"),
    ("model.base_url", "model: {provider: openai, base_url: %s/}", "/chat/completions"),
    ("model.transcription.base_url", "model: {provider: openai, transcription: {name: w, base_url: %s}}",
     "/audio/transcriptions"),
])
def test_a_model_endpoint_given_as_the_base_url_is_an_error(load, key, yaml_key, suffix):
    # The client adds the path itself: every turn would be a 404 to …/chat/completions/chat/completions.
    url = f"https://user:hunter2@llm.example.com/v1{suffix}"
    errors = errors_of(load, yaml_key % url + "\n")
    assert errors == [f"{key}: expected the API's base URL, without {suffix}: the client adds that path itself"
                      f" (http://127.0.0.1:11434/v1, not http://127.0.0.1:11434/v1{suffix})"]
    assert "hunter2" not in errors[0]


async def test_an_openai_base_url_variable_naming_the_endpoint_stops_the_start_for_good():
    async with FakeOpenAIServer() as server:  # it answers: a start would go on, and fail every turn
        with pytest.raises(StartupError) as info:
            await check_model(ModelSettings(provider="openai"),
                              env={"OPENAI_BASE_URL": server.base_url + "/chat/completions"})
    assert str(info.value).startswith("$OPENAI_BASE_URL: expected the API's base URL, without /chat/completions:")
    assert info.value.lasting


async def test_run_refuses_a_prefixed_discord_token_with_status_78_and_never_shows_it(tmp_path):
    async with FakeDiscord(token=DISCORD) as fake:  # which refuses "Bot Bot …" as Discord does
        config = write_config(tmp_path / "c.yaml", {
            "state_dir": str(tmp_path / "state"), "server": {"port": 0},
            "platforms": {"discord": {"enabled": True, "allow_all": True, "token": f"Bot {DISCORD}",
                                      "api_base": fake.api_base}}})
        start = await asyncio.to_thread(run, tmp_path, "run", "--config", str(config))
    assert start.returncode == EXIT_CONFIG, start.stderr
    assert any("platforms.discord.token: write the token alone" in line for line in problem_lines(start.stderr)), \
        start.stderr
    assert DISCORD[:12] not in start.stderr + start.stdout
