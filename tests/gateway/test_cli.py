import argparse
import http.server
import json
import logging
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from gateway.cli import EXIT_CONFIG, build_parser, main
from gateway.logging import PER_EVENT_LOGGERS
from tests.gateway import cli_process

pytestmark = pytest.mark.usefixtures("cli_isolated")


def test_ask_with_the_demo_model_prints_a_labelled_reply(capsys, tmp_path):
    assert main(["ask", "hello", "there"]) == 0
    assert capsys.readouterr().out.startswith("[demo]")
    assert (tmp_path / "state" / "switchboard.db").exists()


def test_a_command_run_in_process_leaves_the_logging_as_it_found_it(capsys):
    # Its log went to the stderr of the moment, which its caller may close once the command has
    # returned (pytest's capture did): every line logged after was a "--- Logging error ---".
    root, per_event = logging.getLogger(), logging.getLogger(PER_EVENT_LOGGERS[0])
    before = (list(root.handlers), root.level, per_event.level)
    assert main(["ask", "hello"]) == 0
    assert (root.handlers, root.level, per_event.level) == before


def test_ask_with_a_scripted_model_runs_tools(capsys, tmp_path):
    (tmp_path / "state" / "workspace").mkdir(parents=True)
    (tmp_path / "state" / "workspace" / "notes.txt").write_text("the answer is 42\n")
    script = {"parent": [[{"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
                          {"text": "read it"}]]}
    (tmp_path / "script.json").write_text(json.dumps(script))
    (tmp_path / "switchboard.yaml").write_text(f"model:\n  provider: scripted\n  script: {tmp_path / 'script.json'}\n")
    assert main(["ask", "read notes"]) == 0
    assert capsys.readouterr().out == "read it\n"


def test_ask_takes_a_message_that_is_not_utf8_as_the_chat_does(capsys, tmp_path):
    """`switchboard ask "$(cat notes-latin1.txt)"`: Python hands over the bytes that are not UTF-8 as
    lone surrogates, which no UTF-8 output can print; they become U+FFFD, as typed into the chat."""
    latin1 = os.fsdecode(b"Compare:\n- caf\xe9\n- tea")  # the demo model names each item in its answer
    assert main(["ask", latin1]) == 0
    assert "caf\ufffd: completed" in capsys.readouterr().out


def test_a_failed_turn_exits_non_zero(capsys, tmp_path):
    (tmp_path / "script.yaml").write_text("parent:\n  - - error: server_error\n      message: upstream down\n")
    (tmp_path / "switchboard.yaml").write_text(f"model:\n  provider: scripted\n  script: {tmp_path / 'script.yaml'}\n")
    assert main(["ask", "x"]) == 1
    assert "the turn ended early (error): upstream down" in capsys.readouterr().err


def test_a_turn_the_provider_refused_the_key_of_names_the_setting_to_fix(capsys, tmp_path):
    (tmp_path / "script.yaml").write_text("parent:\n  - - error: auth\n      message: 401 - Incorrect API key\n")
    (tmp_path / "switchboard.yaml").write_text(f"model:\n  provider: scripted\n  script: {tmp_path / 'script.yaml'}\n")
    assert main(["ask", "x"]) == 1
    assert capsys.readouterr().err.strip().endswith(
        "401 - Incorrect API key; check model.api_key, or $OPENAI_API_KEY when model.api_key is unset")


def test_config_errors_stop_the_command_with_the_key_path(capsys, tmp_path):
    (tmp_path / "switchboard.yaml").write_text("delegation:\n  max_concurrent_children: ten\n")
    assert main(["ask", "x"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert 'delegation.max_concurrent_children: expected an integer ≥ 1, got "ten"' in err


@pytest.mark.parametrize("command", [["run"], ["ask", "x"], ["config", "check"]])
def test_config_errors_come_with_the_warnings_errors_first(capsys, command):
    # An operator who fixes the errors must not learn of the misspelt key only on the next run.
    (Path("switchboard.yaml")).write_text("server:\n  port: 70000\ndelegation:\n  max_concurent_children: 3\n")
    assert main(command) == (1 if command[0] == "config" else EXIT_CONFIG)  # a check is no start
    lines = capsys.readouterr().err.splitlines()
    assert lines[:2] == ["error: server.port: expected an integer ≥ 0 and ≤ 65535, got 70000",
                         'warning: delegation.max_concurent_children: unknown key (did you mean'
                         ' "max_concurrent_children"?)'], lines


def test_the_inbox_commands_print_the_configuration_warnings(capsys, tmp_path):
    # As every other command: a misspelt key is told of whichever command is run.
    (tmp_path / "switchboard.yaml").write_text("delegation:\n  max_concurent_children: 3\n")
    for command in (["inbox", "dead"], ["inbox", "retry", "1"]):
        assert main(command) == 1  # no state database yet
        assert capsys.readouterr().err.splitlines()[0] == (
            'warning: delegation.max_concurent_children: unknown key (did you mean "max_concurrent_children"?)')


def test_config_check_masks_secrets_and_exits_by_validity(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-supersecretvalue123456")
    (tmp_path / "good.yaml").write_text("model:\n  provider: openai\n  api_key: ${MY_KEY}\n")
    assert main(["config", "check", str(tmp_path / "good.yaml")]) == 0
    out = capsys.readouterr().out
    assert "api_key: '***'" in out and "supersecret" not in out
    (tmp_path / "bad.yaml").write_text("server:\n  port: 70000\n")
    assert main(["--config", str(tmp_path / "bad.yaml"), "config", "check"]) == 1
    assert "server.port" in capsys.readouterr().err


def commands(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """(words, parser) for the top level and every command and subcommand under it."""
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*words, name))


def test_every_command_and_option_is_in_the_readme():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    for words, parser in commands(build_parser()):
        if words and not parser._subparsers:
            command = f"switchboard {' '.join(words)}"
            assert command in readme, f"README.md does not describe `{command}`"
        options = {o for action in parser._actions for o in action.option_strings if o.startswith("--")} - {"--help"}
        for option in sorted(options):
            assert re.search(rf"(?<![\w-]){option}(?![\w-])", readme), f"README.md does not describe {option}"


def test_console_script_is_installed():
    out = subprocess.run([sys.executable, "-m", "gateway.cli", "--help"], capture_output=True, text=True, check=True)
    assert "ask" in out.stdout and "config" in out.stdout


def test_config_and_set_go_before_or_after_every_command(capsys, tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text("parent:\n  - - text: from the script\n")
    (tmp_path / "c.yaml").write_text(f"model:\n  provider: scripted\n  script: {script}\n")
    (tmp_path / "broken.yaml").write_text('server:\n  port: "eighty"\n')
    config, broken = str(tmp_path / "c.yaml"), str(tmp_path / "broken.yaml")
    for args in (["--config", config, "ask", "hi"], ["ask", "hi", "--config", config], ["ask", "--config", config, "hi"]):
        assert main(args) == 0
        assert capsys.readouterr().out == "from the script\n"
    for command in (["run"], ["chat"], ["ask", "x"], ["config", "check"]):
        for args in (["--config", broken, *command], [*command, "--config", broken]):
            assert main(args) == (1 if command[0] == "config" else EXIT_CONFIG), args
            assert 'server.port: expected an integer' in capsys.readouterr().err
    assert main(["config", "check", "--config", config, "--set", "server.port=9000"]) == 0
    assert "port: 9000" in capsys.readouterr().out
    assert main(["--set", "server.port=9001", "config", "check", config]) == 0
    assert "port: 9001" in capsys.readouterr().out
    assert main(["config", "check", config, "--set", "server.port"]) == 1
    assert "--set server.port: expected KEY=VALUE" in capsys.readouterr().err


def test_set_before_the_command_and_after_it_all_count_in_the_order_given(capsys, tmp_path):
    # argparse copies a subcommand's options over the ones before it: the --set before the
    # command was dropped whenever another came after it.
    config = tmp_path / "c.yaml"
    config.write_text("server:\n  shutdown_grace_seconds: 3\n")
    assert main(["--set", "server.port=9001", "--set", "server.header_timeout_seconds=4", "config",
                 "--set", "server.port=9002", "--set", "server.console=false", "check", str(config),
                 "--set", "server.host=0.0.0.0"]) == 0
    server = yaml.safe_load(capsys.readouterr().out)["server"]
    assert (server["port"], server["header_timeout_seconds"], server["console"], server["host"],
            server["shutdown_grace_seconds"]) == (9002, 4, False, "0.0.0.0", 3)


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path):
    read, write = os.pipe()
    os.close(read)  # `switchboard config check | head -3`, once head has read its lines
    try:
        result = subprocess.run(cli_process.command("config", "check"), stdout=write, stderr=subprocess.PIPE,
                                text=True, stdin=subprocess.DEVNULL, timeout=cli_process.TIMEOUT, cwd=tmp_path,
                                env=cli_process.environment(tmp_path))
    finally:
        os.close(write)
    assert result.stderr == ""
    assert result.returncode == 0  # the configuration loads: 1 said it had errors (test_cli_reader_gone)


def test_an_answer_whose_reader_stopped_early_is_no_failure_to_start(tmp_path):
    # `switchboard ask hi | head -c 60`: the pipe broke inside the command, not at the last flush, and was
    # told as "could not start: BrokenPipeError".
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run(cli_process.command("ask", "hello there"), stdout=write, stderr=subprocess.PIPE,
                                text=True, stdin=subprocess.DEVNULL, timeout=cli_process.TIMEOUT, cwd=tmp_path,
                                env=cli_process.environment(tmp_path))
    finally:
        os.close(write)
    assert "could not start" not in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0  # as every command's (test_cli_reader_gone)


class _FailingModel(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible server that is there (preflight passes) but fails every completion."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.send_response(404)
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error": {"message": "down"}}')

    def log_message(self, *args: object) -> None: ...


def test_the_password_in_the_model_url_stays_out_of_the_log(tmp_path):
    server = http.server.HTTPServer(("127.0.0.1", 0), _FailingModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://alice:pw-s3cret-9@127.0.0.1:{server.server_address[1]}/v1"
    try:
        result = cli_process.run(tmp_path, "ask", "hi", "--set", "model.provider=openai", "--set",
                                 f"model.base_url={url}", "--set", "model.max_retries=0", "--set",
                                 "logging.level=DEBUG")
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode == 1
    assert "/v1/chat/completions" in result.stderr  # the request was logged (at DEBUG), with its URL
    assert "s3cret" not in result.stderr + result.stdout


@pytest.mark.parametrize("closed, args, code, says", [
    ("<&-", "chat", 0, "Switchboard terminal chat"),  # no input, as from /dev/null: it greets and ends
    (">&-", "ask hi", 1, "switchboard: ask needs its standard output, which is closed"),
    (">&-", "chat", 1, "switchboard: chat needs its standard output, which is closed"),
])
def test_a_command_started_with_stdin_or_stdout_closed_says_so_without_a_traceback(tmp_path, closed, args, code,
                                                                                    says):
    env = cli_process.environment(tmp_path, SWITCHBOARD_STATE_DIR=str(tmp_path / "state"))
    line = " ".join(cli_process.command(*args.split()))
    result = subprocess.run(["bash", "-c", f"{line} {closed}"], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=cli_process.TIMEOUT)
    assert result.returncode == code and says in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("argv", [["--config", "", "config", "check"], ["config", "check", ""],
                                  ["run", "--config", ""]])
def test_an_empty_config_path_is_a_usage_error_not_the_usual_lookup(argv, capsys):
    # `--config "$CFG"` with CFG unset would otherwise run on whatever file the lookup finds.
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    assert "an empty path names no file" in capsys.readouterr().err
