"""`switchboard config check` and the rendered effective configuration."""

from __future__ import annotations

import io

import yaml

from gateway.config import Config, config_check, config_secrets, load_config, render_effective_config


def run_check(path, env=None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = config_check(None if path is None else str(path), out, err, env=env or {})
    return status, out.getvalue(), err.getvalue()


def test_valid_config_prints_effective_config_with_secrets_masked(write):
    path = write(
        """
        platforms:
          telegram: {enabled: true, token: "${TG}", allow_all: true}
          webhook: {routes: {alerts: {secret: hook-secret-1}}}
        delegation: {max_concurent_children: 3}
        """
    )
    token = "123456:secret-token-value"
    status, out, err = run_check(path, env={"TG": token})
    assert status == 0
    assert err == 'warning: delegation.max_concurent_children: unknown key (did you mean "max_concurrent_children"?)\n'
    assert out.startswith(f"# effective configuration from {path}\n")
    assert token not in out and "hook-secret-1" not in out
    rendered = yaml.safe_load(out)
    assert rendered["platforms"]["telegram"]["token"] == "***"
    assert rendered["platforms"]["webhook"]["routes"]["alerts"]["secret"] == "***"
    assert rendered["platforms"]["slack"]["bot_token"] is None  # unset secrets stay null
    assert rendered["delegation"]["max_concurrent_children"] == 10


def test_invalid_config_prints_every_problem_and_fails(write):
    path = write("server: {port: 70000}\nmodel: {api_key: 42424242}\nzzz: 1\n")
    status, out, err = run_check(path)
    assert status == 1
    assert out == ""
    assert err.splitlines() == [
        "error: model.api_key: expected a string or null, got a value of type integer",
        "error: server.port: expected an integer ≥ 0 and ≤ 65535, got 70000",
        "warning: zzz: unknown key",
        f"2 errors in {path}; the gateway would not start",
    ]


def test_missing_file_fails(tmp_path):
    status, _, err = run_check(tmp_path / "missing.yaml")
    assert status == 1 and f"error: config file {tmp_path / 'missing.yaml'} does not exist" in err


def test_defaults_when_no_file():
    status, out, err = run_check(None)
    assert (status, err) == (0, "")
    assert out.startswith("# effective configuration from built-in defaults")


def test_rendered_config_loads_back_to_the_same_config(write):
    original, _ = load_config(
        write(
            """
            display: {platforms: {slack: {busy_input_mode: steer}}}
            platforms: {discord: {command_guilds: [1, 2]}, telegram: {allowed_users: [1, bob]}}
            plugins: [a.b]
            """
        ),
        env={},
    )
    again, warnings = load_config(write(render_effective_config(original), "again.yaml"), env={})
    assert warnings == []
    assert again == Config(**{**{f: getattr(original, f) for f in original.__dataclass_fields__}, "source": again.source})


def test_a_literal_dollar_brace_is_written_so_that_it_loads_back(write):
    # `$${` in the file is a literal `${`: printed bare, the output's `${name}` was a variable to expand.
    path = write(
        """
        agent: {system_prompt: "Write $${name} as is, and $$${HOME} too"}
        platforms: {telegram: {allowed_users: ["$${odd}"]}}
        state_dir: "state-$${x}"
        """
    )
    status, out, err = run_check(path)
    assert status == 0, err
    original, _ = load_config(path, env={})
    assert original.agent.system_prompt == "Write ${name} as is, and $${HOME} too"
    again, warnings = load_config(write(out, "again.yaml"), env={})
    assert warnings == []
    assert again == Config(**{**{f: getattr(original, f) for f in original.__dataclass_fields__}, "source": again.source})


def test_config_secrets_lists_set_secrets_only(load):
    config, _ = load(
        "model: {api_key: sk-key}\nplatforms: {webhook: {routes: {a: {secret: route-secret}, b: {}}}}"
    )
    assert sorted(config_secrets(config, env={})) == ["route-secret", "sk-key"]


OPENAI_KEY = "sk-from-the-environment-0042"


def test_the_openai_api_key_variable_is_a_secret_like_the_setting_it_stands_in_for(write):
    # model.api_key and model.transcription.api_key fall back to it: the model sends it as its key.
    path = write('server: {port: "${OPENAI_API_KEY}"}\nmodel: {name: "m-${OPENAI_API_KEY}"}\n')
    status, out, err = run_check(path, env={"OPENAI_API_KEY": OPENAI_KEY})
    assert status == 1 and OPENAI_KEY not in err
    assert "error: server.port: expected an integer ≥ 0 and ≤ 65535, got a string that holds the value of a secret" \
           " (not shown)" in err
    status, out, err = run_check(write('model: {name: "m-${OPENAI_API_KEY}"}\n'), env={"OPENAI_API_KEY": OPENAI_KEY})
    assert status == 0 and OPENAI_KEY not in out and yaml.safe_load(out)["model"]["name"] == "***"
    config, _ = load_config(write("", "empty.yaml"), env={})
    assert OPENAI_KEY in config_secrets(config, env={"OPENAI_API_KEY": OPENAI_KEY})  # so the log masks it too
    assert config_secrets(config, env={"OPENAI_API_KEY": ""}) == []


def test_an_empty_openai_api_key_variable_masks_nothing(write):
    status, _, err = run_check(write("server: {port: eighty}\n"), env={"OPENAI_API_KEY": ""})
    assert err.splitlines()[0] == 'error: server.port: expected an integer ≥ 0 and ≤ 65535, got "eighty"'


def test_a_password_in_a_url_is_masked_and_the_rest_of_the_url_kept(write):
    path = write(
        """
        model: {provider: openai, base_url: "http://alice:pw-s3cret-9@127.0.0.1:8000/v1"}
        telemetry: {otlp_endpoint: "https://collector:otlp%40pass@otel.example.com:4318"}
        """
    )
    status, out, err = run_check(path)
    assert status == 0, err
    assert "s3cret" not in out and "otlp%40pass" not in out
    rendered = yaml.safe_load(out)
    assert rendered["model"]["base_url"] == "http://alice:***@127.0.0.1:8000/v1"
    assert rendered["telemetry"]["otlp_endpoint"] == "https://collector:***@otel.example.com:4318"
    config, _ = load_config(path, env={})
    assert "pw-s3cret-9" in config_secrets(config)  # so the log masks it too


def test_a_credential_in_a_url_query_is_masked_and_the_rest_of_the_url_kept(write):
    # Receivers and proxies often take their key in the query string: config check output is pasted
    # into bug reports, and HTTP clients log the URLs they request.
    path = write(
        """
        model: {provider: openai, base_url: "https://llm.example.com/v1?api-version=2024-06&api-key=q-s3cret-1"}
        platforms:
          webhook:
            routes: {out: {secret: route-secret, deliver_url: "https://hooks.example.com/in?token=q-s3cret-2&room=7"}}
        """
    )
    status, out, err = run_check(path)
    assert status == 0, err
    assert "q-s3cret" not in out
    rendered = yaml.safe_load(out)
    assert rendered["model"]["base_url"] == "https://llm.example.com/v1?api-version=2024-06&api-key=***"
    assert rendered["platforms"]["webhook"]["routes"]["out"]["deliver_url"] == (
        "https://hooks.example.com/in?token=***&room=7")
    config, _ = load_config(path, env={})
    assert {"q-s3cret-1", "q-s3cret-2"} <= set(config_secrets(config))  # so the log masks them too


def test_the_collectors_header_values_are_secrets_too(load):
    """A hosted collector's API key travels in $OTEL_EXPORTER_OTLP_HEADERS (docs/console.md): the
    log masks it as it masks the model's key; header names and short values are not secrets."""
    config, _ = load("")
    env = {"OTEL_EXPORTER_OTLP_HEADERS": "x-honeycomb-team=hc-key-123, x-tenant=ab",
           "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "authorization=Bearer%20tr-9f8e7d"}
    assert sorted(config_secrets(config, env=env)) == ["Bearer tr-9f8e7d", "Bearer%20tr-9f8e7d", "hc-key-123"]


def test_no_secret_shows_in_the_configurations_repr(load):
    """A traceback's locals or a debug line print the settings' repr: every secret setting stays out."""
    from platforms.webhook import Route

    config, _ = load("model: {api_key: sk-in-a-repr-0042}\n"
                     "platforms: {webhook: {routes: {a: {secret: route-secret-0042}}}, telegram: {token: tg-0042:abc}}")
    assert not any(secret in repr(config) for secret in ("sk-in-a-repr-0042", "route-secret-0042", "tg-0042:abc"))
    assert "route-secret-0042" not in repr(Route("route-secret-0042", "http://127.0.0.1/in"))


def test_a_password_in_the_base_url_variable_is_a_secret_too(load):
    """With model.base_url unset the model asks $OPENAI_BASE_URL, whose password (a proxy's basic auth) the
    log must mask as it masks one written into the setting: as written, and decoded."""
    config, _ = load("")
    env = {"OPENAI_BASE_URL": "http://alice:p%40ss-s3cret@127.0.0.1:9/v1"}
    assert sorted(config_secrets(config, env=env)) == ["p%40ss-s3cret", "p@ss-s3cret"]
