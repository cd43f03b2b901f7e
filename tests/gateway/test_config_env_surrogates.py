r"""A byte of an environment variable that is not UTF-8 (Latin-1's é in ``TOKEN``) reaches Python as half of a
UTF-16 pair (U+DC80..U+DCFF, os.environ's surrogateescape). Through ``${TOKEN}`` it was taken: the HTTP client
dropped it from a Telegram token's URL (the bot refused as unauthorised, the token looking right), a prompt holding
it could not be encoded to be sent, and `config check` printed it as an escape no file gives back. It is an error
naming the key and the variable, never the value, which may be a secret. The text ``\ud83d\ude00`` in a variable is
data taken as written, not YAML's escape of 😀."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.config import ConfigError, load_config

_SECRET = "12345:AAE-s3cr\udce9t"  # what os.environ holds for the bytes b"12345:AAE-s3cr\xe9t"
_KEYS = {
    "platforms.telegram.token": "platforms:\n  telegram:\n    enabled: true\n    token: ${V}\n",
    "agent.system_prompt": "agent:\n  system_prompt: \"You are ${V}.\"\n",
    "model.name": "model:\n  name: ${V}\n",
    "state_dir": "state_dir: ${V}\n",
}


def _load(tmp_path: Path, text: str, env: dict[str, str]):
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return load_config(path, env={"HOME": str(tmp_path), **env})


@pytest.mark.parametrize("key", list(_KEYS))
def test_a_byte_that_is_not_utf8_is_an_error_naming_the_variable_not_the_value(tmp_path, key):
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, _KEYS[key], {"V": _SECRET})
    [error] = [e for e in caught.value.errors if e.startswith(f"{key}:")]
    assert error == (f"{key}: environment variable V holds a byte that is not UTF-8, which no setting can use"
                     " (a client would drop or fail on it): set it as UTF-8 text"), error
    assert not any("s3cr" in e or "\\udce9" in e or "\udce9" in e for e in caught.value.errors), caught.value.errors


def test_the_fallback_is_not_taken_for_a_value_that_is_not_text(tmp_path):
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, "agent:\n  system_prompt: ${V:-kind}\n", {"V": _SECRET})
    assert any(e.startswith("agent.system_prompt: environment variable V holds a byte") for e in caught.value.errors)


def test_an_escaped_pair_in_a_variable_is_taken_as_written(tmp_path):
    config, _ = _load(tmp_path, "agent:\n  system_prompt: ${V}\n", {"V": r"\ud83d\ude00"})
    assert config.agent.system_prompt == r"\ud83d\ude00"


def test_config_check_names_the_variable_of_bytes_from_the_real_environment(tmp_path):
    (tmp_path / "config.yaml").write_text("agent:\n  system_prompt: ${PROMPT}\n", encoding="utf-8")
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("SWITCHBOARD_CONFIG", None)
    env = {k.encode(): v.encode("utf-8", "surrogateescape") for k, v in env.items()}
    env[b"PROMPT"] = b"caf\xe9 s3cret"
    command = [sys.executable, "-c", "from gateway.entry import main; raise SystemExit(main())",
               "config", "check", "--config", str(tmp_path / "config.yaml")]
    done = subprocess.run(command, env=env, capture_output=True, cwd=Path(__file__).parents[2], timeout=60)
    assert done.returncode != 0, done.stdout
    assert b"agent.system_prompt: environment variable PROMPT holds a byte that is not UTF-8" in done.stderr, (
        done.stderr)
    assert b"s3cret" not in done.stderr + done.stdout and b"Traceback" not in done.stderr
