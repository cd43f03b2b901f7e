"""Operator mistakes in the file: each is one clear error, and none of them echoes a secret."""

from __future__ import annotations

import io

import pytest

from gateway.config import ConfigError, config_check, load_config

TOKEN = "777002:AAE-abcdefghijklmnopqrstuvwxyz0123"
HOOK = "whsec-0123456789abcdef"


def problems(load, text: str, env=None) -> tuple[list[str], list[str]]:
    with pytest.raises(ConfigError) as info:
        load(text, env)
    return info.value.errors, info.value.warnings


def test_a_misspelt_platform_is_an_error_not_a_warning(load):
    errors, warnings = problems(load, "platforms:\n  telgram: {enabled: true}\n")
    assert errors == ['platforms.telgram: unknown key (did you mean "telegram"?); a misspelt key here would'
                      " silently leave something off"]
    assert warnings == []


def test_a_misspelt_key_inside_a_platform_is_an_error(load):
    errors, _ = problems(load, "platforms:\n  discord: {enabeld: true, token: t0k3n}\n")
    assert errors == ['platforms.discord.enabeld: unknown key (did you mean "enabled"?); a misspelt key here would'
                      " silently leave something off"]


def test_elsewhere_unknown_keys_stay_warnings(load):
    config, warnings = load("delegation: {max_concurent_children: 3}\n")
    assert warnings == ['delegation.max_concurent_children: unknown key (did you mean "max_concurrent_children"?)']


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('server: {port: "8080"}',
         'server.port: expected an integer ≥ 0 and ≤ 65535, got "8080" (quoted, so it is text: drop the quotes and'
         " write port: 8080)"),
        ('server: {shutdown_grace_seconds: "2.5"}',
         'server.shutdown_grace_seconds: expected a number ≥ 0, got "2.5" (quoted, so it is text: drop the quotes'
         " and write shutdown_grace_seconds: 2.5)"),
        ('platforms: {webhook: {enabled: "true"}}',
         'platforms.webhook.enabled: expected true or false, got "true" (quoted, so it is text: drop the quotes and'
         " write enabled: true)"),
        ('platforms: {discord: {command_guilds: ["42"]}}',
         'platforms.discord.command_guilds[0]: expected an integer, got "42" (quoted, so it is text: drop the quotes'
         " and write 42)"),
        ('server: {port: "eighty"}', 'server.port: expected an integer ≥ 0 and ≤ 65535, got "eighty"'),
    ],
)
def test_a_quoted_number_gets_a_hint_to_drop_the_quotes(load, text, error):
    errors, _ = problems(load, text)
    assert errors == [error]


def test_an_unset_variable_is_reported_once_per_key(load):
    errors, _ = problems(load, """
        platforms:
          telegram: {enabled: true, token: "${TG_TOKEN}", allow_all: true}
        server:
          host: "${HOST}-${HOST}"
        """)
    assert errors == [
        "platforms.telegram.token: environment variable TG_TOKEN is not set (use ${TG_TOKEN:-default} to give a default)",
        "server.host: environment variable HOST is not set (use ${HOST:-default} to give a default)",
    ]


SECRET_EVERYWHERE = f"""
    platforms:
      telegram: {{enabled: true, token: "${{TG}}", allow_all: true, api_base: "http://127.0.0.1:9/bot${{TG}}"}}
      webhook: {{enabled: true, routes: {{hook: {{secret: {HOOK}}}}}}}
    server:
      port: {HOOK}
      host: "{HOOK}"
    model:
      name: "prefix-{HOOK}-suffix"
    delegation:
      gateway_mode: "{HOOK}"
    plugins: ["{HOOK}"]
    """


def test_config_check_never_prints_a_secret_typed_into_another_key(write):
    path = write(SECRET_EVERYWHERE)
    out, err = io.StringIO(), io.StringIO()
    assert config_check(str(path), out, err, env={"TG": TOKEN}) == 1
    assert out.getvalue() == ""
    printed = err.getvalue()
    assert "server.port: expected an integer" in printed and "delegation.gateway_mode" in printed
    for secret in (TOKEN, HOOK, "AAE-abcdefghijklmnopqrstuvwxyz0123"):
        assert secret not in printed


def test_an_env_file_given_as_the_config_file_is_refused_without_its_values(write):
    # `--config .env`: YAML reads its lines as one string, every key in it.
    path = write(f"OPENAI_API_KEY=sk-proj-0123456789abcdef\nTELEGRAM_BOT_TOKEN={TOKEN}\n", name=".env")
    out, err = io.StringIO(), io.StringIO()
    assert config_check(str(path), out, err, env={}) == 1
    assert err.getvalue().splitlines()[0] == (f"error: {path}: the top level must be a mapping of sections, got a"
                                              " string (not shown: it may hold secrets)")
    assert "0123456789abcdef" not in err.getvalue() and "abcdefghij" not in err.getvalue()


@pytest.mark.parametrize("key", ["platforms.telegram.token", "model.api_key"])
def test_a_secret_written_inside_a_reference_in_place_of_its_name_is_not_shown(load, key):
    # The example's `token: "${TELEGRAM_BOT_TOKEN}"`, with the token pasted over the variable's name.
    section, _, name = key.rpartition(".")
    nested = f"{{{name}: 'x${{{TOKEN}}}'}}"
    for part in reversed(section.split(".")):
        nested = f"{{{part}: {nested}}}"
    errors, _ = problems(load, nested[1:-1] + "\n")
    assert errors == [f"{key}: bad reference ***: expected ${{NAME}} or ${{NAME:-default}}"]
    assert problems(load, "server: {host: '${bad name}'}\n")[0] == [  # elsewhere a reference is named as written
        "server.host: bad reference ${bad name}: expected ${NAME} or ${NAME:-default}"]


def test_the_effective_config_hides_a_secret_typed_into_another_key(write):
    path = write(f"""
        platforms:
          webhook: {{enabled: true, routes: {{hook: {{secret: {HOOK}}}}}}}
        server:
          host: "{HOOK}"
          console: false
        model:
          name: "prefix-{HOOK}"
        """)
    out, err = io.StringIO(), io.StringIO()
    assert config_check(str(path), out, err, env={}) == 0
    assert HOOK not in out.getvalue() + err.getvalue()
    assert "host: '***'" in out.getvalue() and "name: '***'" in out.getvalue()


LONG_PASSWORD = "hunter2pass" * 8


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('platforms: {webhook: {enabled: true, routes: {alerts: "https://bot:hunter2pass@hooks.example.com/in?token=tok123456"}}}',
         'error: platforms.webhook.routes.alerts: expected a mapping, got "https://bot:***@hooks.example.com/in?token=***"'),
        ('telemetry: "https://u:hunter2pass@otel.example.com:4318"',
         'error: telemetry: expected a mapping, got "https://u:***@otel.example.com:4318"'),
        ('lifecycle: {temporal: {address: "user:hunter2pass@host:7233"}}',
         'error: lifecycle.temporal.address: expected host:port such as "127.0.0.1:7233", got "user:***@host:7233"'),
        # Cut short by the message before its "@": the part of the password shown is masked all the same.
        (f'server: {{port: "https://user:{LONG_PASSWORD}@host.example.com"}}',
         'error: server.port: expected an integer ≥ 0 and ≤ 65535, got "https://user:***…"'),
        ('delegation: {compression_threshold_tokens: "https://otel.example.com/?x=1&Api-Key=hunter2pass"}',
         'warning: delegation.compression_threshold_tokens: expected an integer ≥ 0, got'
         ' "https://otel.example.com/?x=1&Api-Key=***"; ignored, using the default 0'),
        ('"https://bot:hunter2pass@hooks.example.com/in"',
         'error: {path}: the top level must be a mapping of sections, got a string (not shown: it may hold secrets)'),
    ],
)
def test_a_password_in_a_url_is_masked_in_errors_and_warnings_as_in_the_output(write, text, line):
    # docs/configuration.md: a password in a URL is a secret in any setting, and no secret is in an error.
    path = write(text + "\n")
    out, err = io.StringIO(), io.StringIO()
    config_check(str(path), out, err, env={})
    assert line.format(path=path) in err.getvalue().splitlines()
    assert "hunter2pass" not in err.getvalue() + out.getvalue() and "tok123456" not in err.getvalue()


@pytest.mark.parametrize("url, why", [
    ("example.com/hooks/in", "the scheme is missing or wrong"), ("ftp://example.com/in", "the scheme is missing or wrong"),
    ("hooks.example.com", "the scheme is missing or wrong"), ("http:/in", "the host is missing"),
    ("http://", "the host is missing"),
    ("https://hooks.example.com:99999/in", "the port is not a number from 1 to 65535"),
    ("http://hooks.example.com:abc/in", "the port is not a number from 1 to 65535"),
])
def test_a_webhook_deliver_url_that_cannot_be_posted_to_is_an_error(load, url, why):
    # Else the gateway starts, and every reply fails as a "network error" for an hour, then is dropped.
    errors, _ = problems(load, f"platforms:\n  webhook: {{enabled: true, routes: {{hook: {{secret: {HOOK},"
                               f" deliver_url: '{url}'}}}}}}\n")
    assert errors == ["platforms.webhook.routes.hook.deliver_url: expected an http(s) URL such as"
                      f" https://example.com/hooks/switchboard ({why})"]
    assert not any(url in e or HOOK in e for e in errors)


@pytest.mark.parametrize("name", ["ops/alerts", "ops alerts", "-alerts", "a" * 65])
def test_a_webhook_route_name_the_adapter_refuses_is_a_configuration_error(load, name):
    # Else `config check` passes and the start fails on a ValueError that names no key.
    errors, _ = problems(load, f"platforms:\n  webhook: {{enabled: true, routes: {{'{name}': {{secret: {HOOK}}}}}}}\n")
    assert errors == [f"platforms.webhook.routes.{name}: expected a route name of 1–64 letters, digits, '-' or '_',"
                      " starting with a letter or digit (it is the path of its URL, /webhooks/<name>)"]


def test_a_webhook_deliver_url_with_a_token_in_it_is_fine(load):
    config, _ = load("platforms:\n  webhook: {enabled: true, routes: {hook: {secret: s,"
                     " deliver_url: 'https://hooks.example.com/in/bot1:x?token=abc'}}}\n")
    assert config.platforms.webhook.routes["hook"].deliver_url.startswith("https://hooks.example.com/")


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        ('token: "AAE-no-bot-id"',
         "platforms.telegram.token: expected the token @BotFather gave, such as 123456789:AAE…: the bot's id, a"
         " colon, then the secret, without spaces"),
        ('token: "123456:ABC", mode: webhook, webhook_url: "https://bot.example.com/tg", webhook_secret: "not ok!"',
         "platforms.telegram.webhook_secret: expected 1–256 characters among A-Z a-z 0-9 _ - (Telegram refuses"
         " any other)"),
    ],
)
def test_a_telegram_credential_telegram_would_refuse_names_its_key(load, settings, error):
    errors, _ = problems(load, f"platforms:\n  telegram: {{enabled: true, allow_all: true, {settings}}}\n")
    assert errors == [error]


@pytest.mark.parametrize("pair", ["platforms.telegram.token:777002:AAE-secretpart0123", "platforms.telegram.token",
                                  "platforms.telegram token=777002:AAE-secretpart0123"])
def test_a_set_that_is_not_key_value_does_not_echo_what_followed_the_key(pair):
    # `token:value` (the file's habit) leaves the whole pair one word: it may well hold the secret.
    with pytest.raises(ConfigError) as info:
        load_config(None, env={}, overrides=[pair])
    errors = info.value.errors
    assert len(errors) == 1 and errors[0].startswith("--set platforms.telegram")
    assert "expected KEY=VALUE" in errors[0] and "secretpart" not in errors[0]


def test_a_platform_written_outside_platforms_is_an_error_that_says_where_it_goes(load):
    # The gateway would otherwise start with Telegram silently off, as for a misspelt `telgram:`.
    errors, _ = problems(load, "telegram: {enabled: true, token: '123456:AAE', allow_all: true}\n")
    assert errors == ['telegram: unknown key (did you mean "platforms.telegram"?); a key that belongs under'
                      " platforms would silently leave something off here"]


def test_a_setting_in_the_wrong_section_is_a_warning_that_says_where_it_goes(load):
    _, warnings = load("port: 9000\nagent: {max_concurrent_children: 3}\nserver: {token: t0k3n}\n")
    assert warnings == ['port: unknown key (did you mean "server.port"?)', 'agent.max_concurrent_children: unknown key'
                        ' (did you mean "delegation.max_concurrent_children"?)',
                        "server.token: unknown key"]  # a platform's setting, but which platform's?


@pytest.mark.parametrize("platform", ["telegram", "slack", "discord", "web"])
def test_an_empty_allowed_user_is_an_error_naming_the_variable_it_came_from(load, platform):
    # ADMIN_ID= in an env file gave allowed_users [""]: nobody got in, and nothing said why.
    credentials = {"telegram": f"token: '{TOKEN}'", "slack": "bot_token: xoxb-1, app_token: xapp-1",
                   "discord": "token: d1sc0rd", "web": "user_header: X-Forwarded-User"}[platform]
    text = (f"platforms: {{{platform}: {{enabled: true, {credentials},"
            ' allowed_users: [alice, "${ADMIN_ID}", "  ", "${OTHER:-}"]}}')
    errors, _ = problems(load, text, {"ADMIN_ID": ""})
    key = f"platforms.{platform}.allowed_users"
    nobody = "an empty entry lets nobody in: write a user id or name, or remove it"
    assert errors == [f"{key}[1]: {nobody} (from ${{ADMIN_ID}}, which is set but empty)",
                      f"{key}[2]: {nobody}", f"{key}[3]: {nobody}"]


@pytest.mark.parametrize(("users", "empty_at"), [('[2.5, alice, "${ADMIN_ID}"]', 2), ('[2.5, "${ADMIN_ID}"]', 1)])
def test_an_empty_allowed_user_after_an_invalid_one_is_named_by_its_place_in_the_file(load, users, empty_at):
    # The invalid item is left out of the list the later checks see: they named alice, or nothing at all.
    errors, _ = problems(load, f"platforms: {{telegram: {{enabled: true, token: '{TOKEN}', allowed_users: {users}}}}}",
                         {"ADMIN_ID": ""})
    key = "platforms.telegram.allowed_users"
    assert errors == [f"{key}[0]: expected an integer or a string, got 2.5",
                      f"{key}[{empty_at}]: an empty entry lets nobody in: write a user id or name, or remove it"
                      " (from ${ADMIN_ID}, which is set but empty)"]


def test_a_plugin_after_an_invalid_one_is_named_by_its_place_in_the_file(load):
    errors, _ = problems(load, 'plugins: [7, "not a module"]')
    assert errors == ["plugins[0]: expected a string, got 7",
                      'plugins[1]: expected an importable module name such as "my_plugins.weather", got "not a module"']


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("delegation: {model_map: {fast: gpt-4o-mini}}",
         'delegation.model_map.fast: expected a mapping, got "gpt-4o-mini"'),
        ("platforms: {webhook: {enabled: true, routes: {alerts: https://hooks.example.com/in}}}",
         'platforms.webhook.routes.alerts: expected a mapping, got "https://hooks.example.com/in"'),
    ],
)
def test_the_keys_under_one_that_failed_are_not_reported_again(load, text, error):
    # Its defaults stood in for it: each "required" under it was about a mapping nobody wrote.
    errors, _ = problems(load, text)
    assert errors == [error]


def test_an_empty_allowed_user_of_a_platform_that_is_off_stops_nothing(load):
    # As its token: a platform that is off reads none of its settings.
    config, _ = load('platforms: {slack: {allowed_users: ["${ADMIN_ID}"]}}', {"ADMIN_ID": ""})
    assert config.platforms.slack.allowed_users == ("",)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        # The secret written in place of its section: the route's `secret:` or the platform's `token:` left out.
        ("platforms:\n  webhook:\n    enabled: true\n    routes:\n      main: ${WEBHOOK_SECRET}\n",
         "platforms.webhook.routes.main"),
        ("platforms:\n  telegram: ${TELEGRAM_BOT_TOKEN}\n", "platforms.telegram"),
        ("delegation:\n  model_map:\n    deep: ${DEEP_API_KEY}\n", "delegation.model_map.deep"),
        ("platforms:\n  webhook:\n    routes: ${WEBHOOK_SECRET}\n", "platforms.webhook.routes"),
    ],
)
def test_a_variable_given_for_a_section_that_holds_secrets_is_not_shown(load, text, key):
    env = {"WEBHOOK_SECRET": HOOK, "TELEGRAM_BOT_TOKEN": TOKEN, "DEEP_API_KEY": HOOK}
    errors, _ = problems(load, text, env)
    assert errors == [f"{key}: expected a mapping, got a string from the environment (not shown: it may hold secrets)"]


def test_a_variable_given_for_a_section_without_secrets_is_still_shown(load):
    errors, _ = problems(load, "display: ${MODE}\n", {"MODE": "interrupt"})
    assert errors == ['display: expected a mapping, got "interrupt"']


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('state_dir: "st\\0ate"\n', "state_dir"),
        ('agent:\n  workspace: "work\\0space"\n', "agent.workspace"),
        ('model:\n  provider: scripted\n  script: "script\\0.yaml"\n', "model.script"),
        ('lifecycle:\n  temporal:\n    tls: {ca_file: "ca\\0.pem"}\n', "lifecycle.temporal.tls.ca_file"),
        ('delegation:\n  profile_routes:\n    p: {description: x, context_files: ["a\\0.md"]}\n',
         "delegation.profile_routes.p.context_files[0]"),
    ],
)
def test_a_path_with_a_nul_character_is_an_error_naming_its_key_not_a_traceback(load, text, key):
    # YAML's "\0" escape: every use of such a path raised ValueError (embedded null byte), from the loader or a start.
    errors, _ = problems(load, text)
    assert len(errors) == 1 and errors[0].startswith(f"{key}: expected a path"), errors
    assert errors[0].endswith("(a path cannot hold the character U+0000)")


@pytest.mark.parametrize("platform", ["telegram", "slack", "discord"])
def test_an_allowed_user_holding_a_list_is_an_error(load, platform):
    # ALLOWED=123,456 in an env file, written as one entry: it matched nobody, and nothing said why.
    credentials = {"telegram": f"token: '{TOKEN}'", "slack": "bot_token: xoxb-1, app_token: xapp-1",
                   "discord": "token: d1sc0rd"}[platform]
    errors, _ = problems(load, f'platforms: {{{platform}: {{enabled: true, {credentials},'
                               ' allowed_users: [alice, "${ALLOWED}"]}}', {"ALLOWED": "123, 456"})
    assert errors == [f"platforms.{platform}.allowed_users[1]: '123, 456' holds several names; list each as an entry"
                      " of its own (allowed_users: [123, alice])"], errors
