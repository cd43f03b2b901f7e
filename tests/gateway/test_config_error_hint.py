"""The line a start with configuration errors ends with names the `config check` that finds them: a bare one
looks the file up anew, and after `--config FILE` checked the defaults or another file instead."""

import shlex

import pytest

from gateway.cli import EXIT_CONFIG, main

pytestmark = pytest.mark.usefixtures("cli_isolated")


def last_line(capsys) -> str:
    return capsys.readouterr().err.splitlines()[-1]


def test_the_hint_names_the_file_given_with_config(tmp_path, capsys):
    config = tmp_path / "etc switchboard" / "config.yaml"  # a space: the hint is typed into a shell as it is
    config.parent.mkdir()
    config.write_text("server:\n  port: eighty\n")
    assert main(["--config", str(config), "run"]) == EXIT_CONFIG
    hint = last_line(capsys)
    assert hint == (f"switchboard: the configuration has errors; `switchboard config check {shlex.quote(str(config))}`"
                    " shows them all")
    # Typed as it reads, it checks that file: the bare one checks the built-in defaults and passes.
    command = shlex.split(hint.split("`")[1])
    assert command[:3] == ["switchboard", "config", "check"]
    assert main(command[1:]) == 1
    assert "error: server.port: expected an integer" in capsys.readouterr().err
    assert main(["config", "check"]) == 0


def test_the_hint_asks_for_the_same_set_options_without_repeating_them(capsys):
    assert main(["chat", "--set", "server.port=eighty"]) == EXIT_CONFIG
    assert last_line(capsys) == ("switchboard: the configuration has errors; `switchboard config check`, with the"
                                 " same --set options, shows them all")
