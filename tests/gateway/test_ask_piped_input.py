"""`cat app.log | switchboard ask "summarise"`: what is piped in is part of the message.

Ignored, the model was asked "summarise" about nothing, and its answer, paid for, came with status 0: a script
had no way to tell. The demo model hands each item of a list to a subagent and names it in its answer, so the
answer shows what it was given."""

from __future__ import annotations

import subprocess

from tests.gateway.cli_process import TIMEOUT, command, environment, write_config

LIMIT = 4 * 1024 * 1024
"""Bytes `ask` takes from its standard input (README.md: 4 MiB)."""


def ask(tmp_path, stdin: bytes, *words: str) -> subprocess.CompletedProcess[bytes]:
    config = write_config(tmp_path / "switchboard.yaml", {
        "state_dir": str(tmp_path / "state"), "model": {"demo": {"child_steps": 1, "step_seconds": 0.01}}})
    return subprocess.run(command("--config", str(config), "ask", *words), input=stdin, capture_output=True,
                          timeout=TIMEOUT, cwd=tmp_path, env=environment(tmp_path, PYTHONIOENCODING="utf-8"))


def test_a_file_piped_in_is_asked_about_after_the_words_given(tmp_path):
    done = ask(tmp_path, b"- apples\n- pears\n", "Compare", "these:")
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert "apples: completed" in out and "pears: completed" in out, out
    assert b"Traceback" not in done.stderr


def test_bytes_piped_in_that_are_not_utf8_become_replacement_characters(tmp_path):
    done = ask(tmp_path, b"- caf\xe9\n- tea\n", "Compare these:")  # a Latin-1 file
    assert done.returncode == 0, done.stderr
    assert "caf\ufffd: completed" in done.stdout.decode()


def test_nothing_piped_in_leaves_the_message_as_given(tmp_path):
    done = ask(tmp_path, b"", "hello")
    assert done.returncode == 0 and done.stdout.startswith(b"[demo]"), done


def test_more_than_the_limit_piped_in_is_a_usage_mistake_and_no_model_is_asked(tmp_path):
    done = ask(tmp_path, b"x" * (LIMIT + 4096), "summarise")
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""
    err = done.stderr.decode()
    assert err.startswith("usage: switchboard ask") and "standard input" in err, err
    assert not (tmp_path / "state" / "switchboard.db").exists()  # stopped before the state directory was used
