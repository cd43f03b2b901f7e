"""A credential written into a URL-valued setting, or into $OPENAI_BASE_URL, is masked in the log
wherever the URL shows up (an HTTP client's request line, an SDK's error): a token given as the
user name alone and a credential-named query or fragment parameter's value, as a password is."""

from __future__ import annotations

import io
import logging
import textwrap

import yaml

from gateway.config import config_check, config_secrets, load_config
from gateway.logging import logging_installed

log = logging.getLogger("httpx")  # the HTTP client that logs every URL it requests (at DEBUG: `PER_EVENT_LOGGERS`)


def logged(config, env: dict[str, str], *lines: str) -> str:
    stream = io.StringIO()
    with logging_installed("DEBUG", stream=stream, secrets=config_secrets(config, env=env), repeat_window=0):
        for line in lines:
            log.info("HTTP Request: POST %s", line)
    return stream.getvalue()


def write(tmp_path, text: str):
    path = tmp_path / "switchboard.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_a_token_as_a_urls_user_name_and_credential_parameters_are_masked_in_the_log(tmp_path):
    path = write(tmp_path, """
        model: {provider: openai, base_url: "https://tk-u5er-alone-a1@proxy.example/v1"}
        telemetry: {otlp_endpoint: "https://otel.example/v1/traces#access_token=fr4g-s3cret-a2"}
        platforms:
          telegram: {api_base: "http://tg-u5er-alone-a3@127.0.0.1:8081"}
          webhook: {routes: {out: {secret: route-secret-a0, deliver_url: "https://h.example/in?sig=qu3ry%2Fs3cret-a4"}}}
        """)
    config, _ = load_config(path, env={})
    out = logged(config, {},
                 "https://tk-u5er-alone-a1@proxy.example/v1/chat/completions",
                 "https://otel.example/v1/traces#access_token=fr4g-s3cret-a2",
                 "http://tg-u5er-alone-a3@127.0.0.1:8081/bot1/getMe",
                 "https://h.example/in?sig=qu3ry%2Fs3cret-a4",
                 "qu3ry/s3cret-a4 (as an SDK decodes it)")
    for secret in ("u5er-alone", "s3cret"):
        assert secret not in out
    assert "https://***@proxy.example/v1/chat/completions" in out
    assert "#access_token=***" in out and "http://***@127.0.0.1:8081/bot1/getMe" in out


def test_the_base_url_variables_user_name_token_and_query_credential_are_masked_in_the_log(tmp_path):
    """$OPENAI_BASE_URL stands in for model.base_url: what would be a secret there is one here."""
    config, _ = load_config(write(tmp_path, ""), env={})
    env = {"OPENAI_BASE_URL": "https://env-u5er-tok3n-b1@proxy.example/v1?api-version=7&api-key=env%40q-s3cret-b2"}
    out = logged(config, env, env["OPENAI_BASE_URL"], "key env@q-s3cret-b2 refused")
    assert "u5er-tok3n" not in out and "s3cret" not in out
    assert "https://***@proxy.example/v1?api-version=7&api-key=***" in out


def test_a_user_name_beside_a_password_or_too_short_is_no_secret(tmp_path):
    """Masking ``alice`` or ``git`` all over the log would mangle ordinary words; the password goes."""
    path = write(tmp_path, """
        model: {provider: openai, base_url: "http://alice:pw-s3cret-c1@127.0.0.1:8000/v1"}
        telemetry: {otlp_endpoint: "https://git@otel.example/v1/traces"}
        """)
    config, _ = load_config(path, env={})
    assert set(config_secrets(config, env={})) == {"pw-s3cret-c1"}
    out = logged(config, {}, "alice and git are here")
    assert "alice and git are here" in out


def test_config_check_masks_only_the_user_name_token_and_fragment_credential(tmp_path):
    path = write(tmp_path, """
        model: {provider: openai, base_url: "https://tk-u5er-alone-d1@proxy.example/v1"}
        telemetry: {otlp_endpoint: "https://otel.example/v1/traces#access_token=fr4g-s3cret-d2&org=7"}
        """)
    out, err = io.StringIO(), io.StringIO()
    assert config_check(str(path), out, err, env={}) == 0, err.getvalue()
    rendered = yaml.safe_load(out.getvalue())
    assert rendered["model"]["base_url"] == "https://***@proxy.example/v1"
    assert rendered["telemetry"]["otlp_endpoint"] == "https://otel.example/v1/traces#access_token=***&org=7"
