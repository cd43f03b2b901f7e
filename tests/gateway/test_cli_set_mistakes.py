"""Mistakes typed into ``--set`` (docs/configuration.md, "One setting on the command line"): an unknown key is an
error, as the file's is not, and a secret set there is warned about, never shown."""

import re
from pathlib import Path

import pytest

from gateway.cli import EXIT_CONFIG, main
from gateway.config import ConfigError, load_config

pytestmark = pytest.mark.usefixtures("cli_isolated")

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "777002:AAE-secretpart0123"


def problems(overrides, path=None, env=None) -> tuple[list[str], list[str]]:
    try:
        _, warnings = load_config(path, env=env or {}, overrides=overrides)
    except ConfigError as exc:
        return exc.errors, exc.warnings
    return [], warnings


def test_a_misspelt_set_key_stops_every_command_naming_its_set(capsys):
    # It warned, and the gateway ran on the default port: typed now, for this version, it has no newer
    # version's file to excuse it.
    expected = '--set server.prot: unknown key (did you mean "port"?)'
    assert main(["ask", "hi", "--set", "server.prot=9000"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert f"error: {expected}\n" in err and "warning:" not in err
    assert main(["--set", "server.prot=9000", "config", "check"]) == 1
    assert f"error: {expected}\n" in capsys.readouterr().err
    for command in (["run"], ["chat"]):
        assert main([*command, "--set", "server.prot=9000"]) == EXIT_CONFIG
        assert f"error: {expected}\n" in capsys.readouterr().err


def test_an_unknown_key_on_a_set_keys_path_is_an_error_naming_the_set():
    errors, warnings = problems(["servre.port=9000"])
    assert errors == ['--set servre.port: unknown key "servre" (did you mean "server"?)'] and warnings == []
    errors, _ = problems(["port=9000"])  # a setting out of its section: the hint says where it goes
    assert errors == ['--set port: unknown key (did you mean "server.port"?)']


def test_the_files_unknown_keys_stay_warnings_beside_a_set(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("server:\n  prot: 9000\n")
    errors, warnings = problems(["server.port=9001"], path)
    assert errors == [] and warnings == ['server.prot: unknown key (did you mean "port"?)']
    errors, warnings = problems(["server.prot=9001"], path)  # the file's mistake typed again
    assert errors == ['--set server.prot: unknown key (did you mean "port"?)'] and warnings == []


def test_a_misspelt_platform_set_is_one_error_naming_the_set():
    errors, _ = problems(["platforms.telegramm.enabled=true"])
    assert errors == ['--set platforms.telegramm.enabled: unknown key "platforms.telegramm" (did you mean'
                      ' "telegram"?); a misspelt key here would silently leave something off']


def test_the_set_keys_of_make_run_and_of_the_docs_are_known(capsys):
    recipe = re.search(r"^run: .*\n\t\$\(BIN\)/switchboard (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert recipe, "the Makefile's run target changed shape"
    pairs = re.findall(r"--set (\S+)", recipe.group(1))
    assert pairs and main(["config", "check", *(arg for pair in pairs for arg in ("--set", pair))]) == 0
    assert "warning" not in capsys.readouterr().err
    docs = "".join(path.read_text() for path in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
    keys = set(re.findall(r"--set ['\"]?([a-z_][\w.-]*)=", docs))
    assert "server.port" in keys
    for key in keys:
        errors, warnings = problems([f"{key}=null"])
        assert not [line for line in errors + warnings if "unknown key" in line], key


def test_a_secret_set_on_the_command_line_is_warned_about_never_shown(capsys):
    assert main(["config", "check", "--set", f"platforms.telegram.token={TOKEN}"]) == 0
    err = capsys.readouterr().err
    [warning] = [line for line in err.splitlines() if "--set" in line]
    assert warning.startswith("warning: --set platforms.telegram.token: a secret on the command line")
    assert "ps" in warning and "history" in warning and "${VAR}" in warning
    assert "secretpart" not in err
    assert main(["ask", "hi", "--set", "model.api_key=sk-secretpart0123", "--set",
                 "model.api_key=sk-secretpart0123"]) == 0
    err = capsys.readouterr().err
    assert err.count("warning: --set model.api_key: a secret") == 1 and "$OPENAI_API_KEY" in err
    assert "secretpart" not in err


@pytest.mark.parametrize("pair", ["server.console_token=tok-secretpart0123",
                                  "platforms.webhook.routes.alerts.secret=secretpart0123",
                                  "platforms.slack.signing_secret=secretpart0123",
                                  "lifecycle.temporal.api_key=secretpart0123"])
def test_each_kind_of_secret_set_is_warned_about(pair):
    _, warnings = problems([pair])
    key = pair.partition("=")[0]
    assert [line for line in warnings if line.startswith(f"--set {key}: a secret")], warnings
    assert not [line for line in warnings if "secretpart" in line]


@pytest.mark.parametrize("pair", ["model.base_url=https://user:pw@host/v1",
                                  "model.base_url=https://sk-secretpart0123@proxy.example/v1",
                                  "telemetry.otlp_endpoint=https://otlp.example/v1?api_key=secretpart0123"])
def test_a_url_with_credentials_set_is_warned_about_by_key_only(pair):
    # The log's redaction and `config check` take a URL's password or token for a secret: in ps it is one too.
    _, warnings = problems([pair])
    key, _, value = pair.partition("=")
    [warning] = [line for line in warnings if line.startswith("--set")]
    assert warning.startswith(f"--set {key}: a URL with a password or token on the command line"), warning
    assert "ps" in warning and "${VAR}" in warning and value not in warning and "secretpart" not in warning


@pytest.mark.parametrize("pair", ["model.api_key=${MY_KEY}", "model.api_key=null", "model.api_key=",
                                  "model.name=gpt-secret", "model.base_url=https://host.example/v1",
                                  "model.base_url=https://user:${MY_KEY}@host.example/v1",
                                  "agent.system_prompt=Write to bob@example.com: user:pw"])
def test_a_secret_read_from_the_environment_or_left_unset_is_not_warned_about(pair):
    _, warnings = problems([pair], env={"MY_KEY": "sk-secretpart0123"})
    assert not [line for line in warnings if "--set" in line], warnings


def test_the_summary_of_config_check_says_the_errors_are_in_the_set(tmp_path, capsys):
    # It ended "1 error in <file>", sending the operator to look for a mistake in a file that has none.
    path = tmp_path / "c.yaml"
    path.write_text("server:\n  port: 9000\n")
    for pair in ("server.prot=9001", "server.port=70000"):
        assert main(["config", "check", str(path), "--set", pair]) == 1
        assert capsys.readouterr().err.endswith("\n1 error in --set; the gateway would not start\n")
    assert main(["config", "check", "--set", "server.port=70000"]) == 1  # no file at all
    assert capsys.readouterr().err.endswith("\n1 error in --set; the gateway would not start\n")
    path.write_text("server:\n  port: 70000\n")
    assert main(["config", "check", str(path), "--set", "server.prot=9001"]) == 1
    assert capsys.readouterr().err.endswith(f"\n2 errors in {path} and --set; the gateway would not start\n")
    assert main(["config", "check", str(path), "--set", "server.host=127.0.0.1"]) == 1  # the file's form as it was
    assert capsys.readouterr().err.endswith(f"\n1 error in {path}; the gateway would not start\n")
