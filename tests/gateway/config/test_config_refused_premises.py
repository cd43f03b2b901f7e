"""A setting the file got wrong is reported once, by its own error: the checks across settings, which read it
at its default once it is refused, add no error or warning that follows from that default alone (no list of
users read as "nobody may talk to the bot", a plugin list given as a word read as "add the plugin")."""

from __future__ import annotations

import copy
import pickle

import pytest

from gateway.config import ConfigError
from gateway.config.premises import Finding

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


def test_token_needed_without_the_refused_users_is_still_said(load):
    # No user_header: whatever allowed_users holds, a non-loopback host needs the token; refused, it hides nothing.
    errors, _ = problems(load, "server: {host: 0.0.0.0, console: false}\n"
                               "platforms:\n  web: {enabled: true, allowed_users: bob}\n")
    assert [error.partition(": ")[0] for error in errors] == ["platforms.web.allowed_users", "platforms.web.token"]


def test_empty_backend_beside_a_refused_plugin_item_is_still_said(load):
    # The plugin is there: the backend lacks its entries whatever the refused second item was.
    errors, _ = problems(load, 'plugins: [advanced_delegation, "${EXTRA_PLUGIN}"]\ndelegation: {backend: model_map}\n')
    assert [error.partition(": ")[0] for error in errors] == ["plugins[1]", "delegation.backend"]


@pytest.mark.parametrize("refused", [
    "model: {provider: demo, base_url: 'http://127.0.0.1:11434/v1', transcription: {language: 5}}\n",
    "model: {provider: demo, base_url: 'http://127.0.0.1:11434/v1'}\nplugins: [advanced_delegation]\n"
    "delegation:\n  model_map:\n    fast: {description: quick, provider: demo, model: [demo]}\n",
])
def test_unused_base_url_beside_an_unrelated_refusal_is_still_said(load, refused):
    _, warnings = problems(load, refused)
    assert [warning.partition(": ")[0] for warning in warnings] == ["model.base_url"]


@pytest.mark.parametrize("refused", [
    "delegation:\n  model_map: 5\n",
    "delegation:\n  model_map:\n    fast: {description: quick, provider: opneai, model: m}\n",
    "model:\n  transcription: {name: 5}\n",
])
def test_unused_base_url_beside_a_refused_provider_is_not(load, refused):
    # A provider refused might have been openai, as transcription.name might have used the base_url.
    url = "  base_url: http://127.0.0.1:11434/v1\n"
    text = "plugins: [advanced_delegation]\n" + refused.replace("model:\n", "model:\n" + url)
    if not refused.startswith("model"):
        text += "model: {base_url: 'http://127.0.0.1:11434/v1'}\n"
    _, warnings = problems(load, text)
    assert not [warning for warning in warnings if warning.startswith("model.base_url")]


@pytest.mark.parametrize("again", [copy.copy, copy.deepcopy, lambda f: pickle.loads(pickle.dumps(f))])
def test_a_finding_survives_a_copy(again):
    finding = again(Finding("platforms.web: nobody may chat", ["platforms.web.allowed_users"]))
    assert (finding, finding.reads) == ("platforms.web: nobody may chat", ("platforms.web.allowed_users",))
