"""What the validator accepts, and the exact words it uses when it does not."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from gateway.config import Config, ConfigError
from gateway.config.sections import DisplayOverrides


def problems(load, text: str, env=None) -> tuple[list[str], list[str]]:
    with pytest.raises(ConfigError) as info:
        load(text, env)
    return info.value.errors, info.value.warnings


def test_wrong_type(load):
    errors, _ = problems(load, "delegation: {max_concurrent_children: ten}")
    assert errors == ['delegation.max_concurrent_children: expected an integer ≥ 1, got "ten"']


def test_out_of_range(load):
    errors, _ = problems(load, "delegation: {max_concurrent_children: 0}\nmodel: {temperature: 2.5}")
    assert errors == [
        "model.temperature: expected a number ≥ 0 and ≤ 2, got 2.5",
        "delegation.max_concurrent_children: expected an integer ≥ 1, got 0",
    ]


def test_bool_is_not_an_integer_and_int_is_a_number(load):
    errors, _ = problems(load, "delegation: {max_iterations: true}")
    assert errors == ["delegation.max_iterations: expected an integer ≥ 1, got true"]
    config, _ = load("server: {shutdown_grace_seconds: 3}")
    assert config.server.shutdown_grace_seconds == 3.0 and isinstance(config.server.shutdown_grace_seconds, float)


def test_bad_literal(load):
    errors, _ = problems(load, "delegation: {gateway_mode: fast}")
    assert errors == ['delegation.gateway_mode: expected one of "auto", "inline", "background", "async", got "fast"']


def test_literal_matches_case_insensitively_and_stores_canonical_spelling(load):
    assert load("logging: {level: debug, format: JSON}").config.logging.level == "DEBUG"


def test_a_choice_spelt_off_may_be_written_bare(load):
    # YAML reads a bare `off` as false; `progress: off` is what the docs tell people to write.
    config, _ = load("display: {progress: off, platforms: {telegram: {progress: off}}}")
    assert config.display.progress == "off"
    assert config.display.platforms["telegram"].progress == "off"
    errors, _ = problems(load, "display: {progress: on}")
    assert errors == ['display.progress: expected one of "off", "card", null, got true']


def test_all_errors_are_collected(load):
    errors, _ = problems(
        load,
        """
        server: {port: -1, host: 5}
        display: {busy_input_mode: wait}
        platforms:
          telegram: {allowed_users: [1, 2.5, x, [3]]}
        """,
    )
    assert errors == [
        'display.busy_input_mode: expected one of "interrupt", "queue", "steer", got "wait"',
        "platforms.telegram.allowed_users[1]: expected an integer or a string, got 2.5",
        "platforms.telegram.allowed_users[3]: expected an integer or a string, got a list",
        "server.host: expected a string, got 5",
        "server.port: expected an integer ≥ 0 and ≤ 65535, got -1",
    ]


def test_unknown_key_warns_with_suggestion(load):
    config, warnings = load("delegation: {max_concurent_children: 3}\nsever: {}\nzzz: 1")
    assert warnings == [
        'sever: unknown key (did you mean "server"?)',
        "zzz: unknown key",
        'delegation.max_concurent_children: unknown key (did you mean "max_concurrent_children"?)',
    ]
    assert config.delegation.max_concurrent_children == 10


def test_source_is_not_a_config_key(load):
    config, warnings = load("source: x")
    assert (config.source.name, warnings) == ("config.yaml", ["source: unknown key"])


@pytest.mark.parametrize("value, shown", [('"200k"', '"200k"'), ("true", "true")])
def test_lenient_key_is_warned_about_and_ignored(load, value, shown):
    config, warnings = load(f"delegation: {{compression_threshold_tokens: {value}}}")
    assert warnings == [
        f"delegation.compression_threshold_tokens: expected an integer ≥ 0, got {shown}; ignored, using the default 0"
    ]
    assert config.delegation.compression_threshold_tokens == 0


def test_secret_value_is_never_echoed(load):
    errors, _ = problems(
        load,
        """
        model: {api_key: 987654321}
        platforms:
          slack: {bot_token: [xoxb-1234567890-abc]}
          webhook: {routes: {hook: {secret: 31337}}}
        """,
    )
    assert errors == [
        "model.api_key: expected a string or null, got a value of type integer",
        "platforms.webhook.routes.hook.secret: expected a string or null, got a value of type integer",
        "platforms.slack.bot_token: expected a string or null, got a value of type list",
    ]
    assert not any(s in e for e in errors for s in ("987654321", "31337", "xoxb"))


def test_nested_mapping_sections(load):
    config, warnings = load(
        """
        display:
          interim_assistant_messages: true
          long_running_notifications: generic
          platforms:
            telegram: {interim_assistant_messages: false}
            slack: {long_running_notifications: false, busy_input_mode: queue}
        platforms:
          webhook:
            routes:
              alerts: {secret: s3cret-value, deliver_url: "http://127.0.0.1:9/in"}
        """
    )
    assert warnings == []
    assert config.display.long_running_notifications == "generic"
    assert config.display.platforms["telegram"] == DisplayOverrides(interim_assistant_messages=False)
    assert config.display.platforms["slack"].busy_input_mode == "queue"
    assert isinstance(config.display.platforms, MappingProxyType)
    assert config.platforms.webhook.routes["alerts"].secret == "s3cret-value"
    assert config.platforms.webhook.routes["alerts"].deliver_url == "http://127.0.0.1:9/in"


def test_errors_inside_mapping_entries_name_the_entry(load):
    errors, warnings = problems(
        load,
        """
        display:
          platforms:
            telegram: {interim_assistant_messages: sometimes}
            telegarm: {}
        platforms:
          webhook: {routes: {alerts: {deliver_url: 5, secert: x}, 7: {}}}
        """,
    )
    assert errors == [
        "display.platforms.telegram.interim_assistant_messages: expected true, false or null, got \"sometimes\"",
        # Under `platforms` an unknown key is an error: a misspelling would silently switch something off.
        'platforms.webhook.routes.alerts.secert: unknown key (did you mean "secret"?); a misspelt key here would'
        " silently leave something off",
        "platforms.webhook.routes.alerts.deliver_url: expected a string or null, got 5",
        "platforms.webhook.routes.7: expected a string key, got 7",
    ]
    assert warnings == [
        'display.platforms.telegarm: unknown key (did you mean "telegram"?)',
    ]


def test_section_that_is_not_a_mapping(load):
    errors, _ = problems(load, "server: 8080\ndisplay: {platforms: [telegram]}")
    assert errors == ["display.platforms: expected a mapping, got a list", "server: expected a mapping, got 8080"]


def test_lists_become_tuples(load):
    config, _ = load("agent: {disabled_tools: [a, b], enabled_toolsets: [web]}\nplugins: [my_plugins.weather]")
    assert config.agent.disabled_tools == ("a", "b")
    assert config.agent.enabled_toolsets == ("web",)
    assert config.plugins == ("my_plugins.weather",)


def test_plugins_must_be_module_names(load):
    errors, _ = problems(load, "plugins: [ok, not-a-module, 3]")
    assert errors == [
        "plugins[2]: expected a string, got 3",
        'plugins[1]: expected an importable module name such as "my_plugins.weather", got "not-a-module"',
    ]


def test_enabled_platform_needs_its_credentials(load):
    errors, warnings = problems(
        load, "platforms:\n  slack: {enabled: true, mode: http, allow_all: true}\n  discord: {enabled: true, token: t0k3n}"
    )
    assert errors == [
        "platforms.slack.bot_token: required when platforms.slack.enabled is true",
        'platforms.slack.signing_secret: required when platforms.slack.mode is "http"',
    ]
    assert warnings == [
        "platforms.discord: enabled with no allowed_users and allow_all false, so nobody may talk to the bot"
    ]


def test_config_is_frozen():
    with pytest.raises(AttributeError):
        Config().server = None  # type: ignore[misc]


def test_the_web_chat_off_loopback_needs_a_token_in_one_line(load):
    errors, _ = problems(load, "server: {host: 0.0.0.0, console: false}\nplatforms:\n  web: {enabled: true}")
    assert errors == ['platforms.web.token: required when server.host ("0.0.0.0") is not a loopback address '
                      "(or set platforms.web.user_header with allowed_users)"]
    for enough in ("{enabled: true, token: s3cret-token}",
                   "{enabled: true, user_header: X-Forwarded-User, allowed_users: [alice],"
                   " trusted_proxies: [10.0.0.5]}"):
        config, warnings = load(f"server: {{host: 0.0.0.0, console: false}}\nplatforms:\n  web: {enough}")
        assert config.platforms.web.enabled and warnings == []
    for loopback in ("127.0.0.1", "localhost", "::1"):
        config, _ = load(f'server: {{host: "{loopback}"}}\nplatforms:\n  web: {{enabled: true}}')
        assert config.platforms.web.token is None
    config, _ = load("server: {host: 0.0.0.0, console: false}\nplatforms:\n  web: {enabled: false}")  # off: nothing to protect
    assert config.platforms.web.history_limit == 200


def test_the_web_chat_allowlist_needs_a_user_header(load):
    errors, _ = problems(load, 'platforms:\n  web: {enabled: true, allowed_users: [alice], user_header: "X User"}')
    assert errors == [
        'platforms.web.user_header: expected an HTTP header name such as "X-Forwarded-User", got "X User"']
    errors, _ = problems(load, "platforms:\n  web: {enabled: true, allowed_users: [alice]}")
    assert errors == ["platforms.web.allowed_users: needs platforms.web.user_header, the only source of a web "
                      "user's name"]
    _, warnings = load("platforms:\n  web: {enabled: true, user_header: X-Forwarded-User}")
    assert warnings == ["platforms.web: user_header set with no allowed_users and allow_all false, so nobody may chat"]


def test_the_web_chat_token_is_a_secret(load):
    errors, _ = problems(load, "platforms:\n  web: {enabled: true, token: 12345678}")
    assert errors == ["platforms.web.token: expected a string or null, got a value of type integer"]


def test_the_console_off_loopback_needs_its_token_in_one_line(load):
    errors, _ = problems(load, "server: {host: 0.0.0.0}")
    assert errors == ['server.console_token: required when server.host ("0.0.0.0") is not a loopback address: the '
                      "operator console at /console can stop subagents and resend messages (or set server.console:"
                      " false)"]
    config, warnings = load("server: {host: 0.0.0.0, console_token: c0nsole-token}")
    assert config.server.console_token == "c0nsole-token" and warnings == []
    config, _ = load("server: {host: 0.0.0.0, console: false}")
    assert config.server.console is False
    config, _ = load("server: {host: localhost}")
    assert config.server.console and config.server.console_token is None
    errors, _ = problems(load, "server: {console_token: 12345678}")
    assert errors == ["server.console_token: expected a string or null, got a value of type integer"]


def test_telemetry_settings_and_a_bad_endpoint(load):
    config, _ = load("telemetry: {otlp_endpoint: 'http://collector:4318', capture_content: true}")
    assert (config.telemetry.otlp_endpoint, config.telemetry.capture_content) == ("http://collector:4318", True)
    assert load("")[0].telemetry.otlp_endpoint is None and load("")[0].telemetry.capture_content is False
    errors, _ = problems(load, "telemetry: {otlp_endpoint: 'collector:4318'}")
    assert errors == ["telemetry.otlp_endpoint: expected an http(s) URL such as http://127.0.0.1:4318 (the scheme is"
                      " missing or wrong)"]
