"""The log's lines whatever the text they quote and the locale: `switchboard chat`'s log file stays UTF-8
and takes every line, and JSON lines stay JSON on a stderr that is not UTF-8."""

from __future__ import annotations

import json
import subprocess

from tests.gateway.cli_process import TIMEOUT, command, environment, write_config


def _failing_model(tmp_path, message: str, **logging: str) -> str:
    """A configuration whose model's first call fails with ``message``."""
    script = tmp_path / "script.json"
    # As a model server's JSON would hold them: an emoji as itself, a lone surrogate as its escape.
    script.write_bytes(json.dumps({"parent": [[{"error": "server_error", "message": message}]]}, ensure_ascii=False)
                       .encode("utf-8", "backslashreplace"))
    return str(write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"), "logging": logging,
        "model": {"provider": "scripted", "script": str(script), "max_retries": 0}}))


def test_a_lone_surrogate_a_model_sent_is_logged_to_the_chat_log_escaped(tmp_path):
    """A model server's JSON can hold half a surrogate pair (``\\ud800``): written strictly to the UTF-8 file, the
    line was lost and a "--- Logging error ---" traceback printed over the chat."""
    config = _failing_model(tmp_path, "boom \ud800 x")
    done = subprocess.run(command("--config", config, "chat"), input=b"hi\n", capture_output=True, cwd=tmp_path,
                          env=environment(tmp_path), timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert b"Logging error" not in done.stderr
    log = (tmp_path / "state" / "chat.log").read_bytes().decode("utf-8")
    assert "model call failed (server_error): boom \\ud800 x" in log


def test_json_log_lines_on_a_latin1_stderr_are_json(tmp_path):
    """é was written as the byte E9 and the emoji as Python's ``\\U0001f600``, which JSON has no escape for."""
    config = _failing_model(tmp_path, "caf\u00e9 \u2014 \U0001f600 boom", format="json")
    done = subprocess.run(command("--config", config, "ask", "hi"), capture_output=True, stdin=subprocess.DEVNULL,
                          cwd=tmp_path, env=environment(tmp_path, PYTHONIOENCODING="latin-1"), timeout=TIMEOUT)
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.startswith(b"{")]
    assert all(line.isascii() for line in lines), lines  # JSON's own escapes: the same text in any encoding
    records = [json.loads(line) for line in lines]
    assert "model call failed (server_error): caf\u00e9 \u2014 \U0001f600 boom" in [r["msg"] for r in records]
