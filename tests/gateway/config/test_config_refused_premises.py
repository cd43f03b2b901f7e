"""A setting the file got wrong is reported once, by its own error: the checks across settings, which read it
at its default once it is refused, add no error or warning that follows from that default alone (no list of
users read as "nobody may talk to the bot", a plugin list given as a word read as "add the plugin")."""

from __future__ import annotations

import pytest

from gateway.config import ConfigError

TOKEN = "123456789:AAEfaketokenfaketokenfaketokenfake12"


def problems(load, text: str, env=None) -> tuple[list[str], list[str]]:
    with pytest.raises(ConfigError) as info:
        load(text, env)
    return info.value.errors, info.value.warnings


@pytest.mark.parametrize(("users", "env", "error"), [
    ("123", {}, "platforms.telegram.allowed_users: expected a list, got 123"),
    ('["${ADMIN_ID}"]', {}, "platforms.telegram.allowed_users[0]: environment variable ADMIN_ID is not set"
                            " (use ${ADMIN_ID:-default} to give a default)"),
])
def test_users_refused_are_not_also_nobody(load, users, env, error):
    errors, warnings = problems(load, f"platforms:\n  telegram: {{enabled: true, token: '{TOKEN}',"
                                      f" allowed_users: {users}}}\n", env)
    assert errors[0].startswith(error) and len(errors) == 1
    assert warnings == []


def test_allow_all_refused_is_not_also_nobody(load):
    errors, warnings = problems(load, "platforms:\n  discord: {enabled: true, token: t0k3n, allow_all: yes please}")
    assert errors == ['platforms.discord.allow_all: expected true or false, got "yes please"']
    assert warnings == []


def test_routes_refused_are_not_also_no_routes(load):
    errors, warnings = problems(load, "platforms:\n  webhook: {enabled: true, routes: [alerts]}")
    assert errors == ["platforms.webhook.routes: expected a mapping, got a list"]
    assert warnings == []


def test_web_users_refused_are_not_also_nobody(load):
    errors, warnings = problems(load, "platforms:\n  web: {enabled: true, user_header: X-User, allowed_users: bob}")
    assert [error.partition(": ")[0] for error in errors] == ["platforms.web.allowed_users"]
    assert warnings == []


def test_provider_refused_is_not_also_an_unused_base_url(load):
    errors, warnings = problems(load, "model: {provider: opneai, base_url: 'http://127.0.0.1:11434/v1', name: x}")
    assert errors == ['model.provider: expected one of "demo", "openai", "scripted", got "opneai"']
    assert warnings == []


def test_plugins_refused_are_not_also_a_missing_plugin(load):
    errors, _ = problems(load, "plugins: advanced_delegation\ndelegation:\n  backend: model_map\n  model_map:\n"
                               "    fast: {description: quick, provider: demo, model: demo}\n")
    assert [error.partition(": ")[0] for error in errors] == ["plugins"]


def test_what_rests_on_a_setting_the_file_got_right_is_still_said(load):
    # The token is refused; the users, left out, are not: the warning about them stands beside the error.
    errors, warnings = problems(load, "platforms:\n  telegram: {enabled: true, token: 5}")
    assert errors == ["platforms.telegram.token: expected a string or null, got a value of type integer"]
    assert warnings == [
        "platforms.telegram: enabled with no allowed_users and allow_all false, so nobody may talk to the bot"]
