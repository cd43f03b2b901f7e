"""`switchboard config check` refuses what a start would refuse: a configuration it passes does
not then stop `run` or `ask` with an error about a setting. Both run as the real CLI."""

from __future__ import annotations

import pytest

from gateway.cli import EXIT_CONFIG
from tests.gateway.cli_process import problem_lines, run, together, write_config

URL = "expected an http(s) URL"
CASES = {
    "a model URL without its scheme": ({"model": {"provider": "openai", "base_url": "127.0.0.1:11434/v1"}},
                                       "model.base_url", URL),
    "a model URL on another scheme": ({"model": {"provider": "openai", "base_url": "ftp://models.example/v1"}},
                                      "model.base_url", URL),
    "a Telegram webhook URL without its scheme": ({"platforms": {"telegram": {
        "enabled": True, "token": "777004:AAE-abcdefghijklmnopqrstuvwxyz0123456", "allow_all": True,
        "mode": "webhook", "webhook_url": "bot.example.com/telegram", "api_base": "http://127.0.0.1:9"}}},
        "platforms.telegram.webhook_url", URL),
    "a scripted model without its script": ({"model": {"provider": "scripted"}}, "model.script", "required"),
    "a scripted model whose script is not there": ({"model": {"provider": "scripted", "script": "gone.yaml"}},
                                                   "model.script", "cannot read"),
    "a Temporal CA file that is not there": ({"lifecycle": {"engine": "temporal", "temporal": {
        "address": "127.0.0.1:9", "tls": {"ca_file": "gone.pem"}}}}, "lifecycle.temporal.tls.ca_file", "cannot read"),
}


@pytest.mark.parametrize("case", CASES)
def test_what_a_start_refuses_config_check_refuses(tmp_path, case):
    settings, key, problem = CASES[case]
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(tmp_path / "state"), "server": {"port": 0},
                                                **settings})
    check, start = together(lambda: run(tmp_path, "config", "check", str(config)),
                            lambda: run(tmp_path, "ask", "hi", "--config", str(config)))
    assert check.returncode == 1, check.stderr
    assert any(line.startswith(f"error: {key}: {problem}") for line in check.stderr.splitlines()), \
        check.stderr
    assert start.returncode == EXIT_CONFIG  # not started again by the unit: every start would be refused alike
    assert [line.partition(": ")[2] for line in problem_lines(start.stderr)][0].startswith(f"{key}:"), start.stderr
    assert "Traceback" not in start.stderr
