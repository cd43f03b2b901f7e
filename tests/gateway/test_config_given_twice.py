"""`switchboard --config A --config B run`: two files named at one level of the command line. argparse keeps
the last, so B was read without a word and the outcome taken for A's (an alias that adds `--config A`, and
another typed before the command)."""

import pytest

from gateway.cli import EXIT_CONFIG, main
from tests.gateway.test_config_at_two_levels import refused_naming_both


@pytest.fixture(autouse=True)
def isolated(cli_isolated, tmp_path):
    (tmp_path / "a.yaml").write_text("server:\n  port: 9001\n")
    (tmp_path / "b.yaml").write_text("server:\n  port: eighty\n")  # what was read, before: fails fast


ARGVS = {
    "before run": ["--config", "a.yaml", "--config", "b.yaml", "run"],
    "after run": ["run", "--config", "a.yaml", "--config", "b.yaml"],
    "after ask's message": ["ask", "hi", "--config", "a.yaml", "--config", "b.yaml"],
    "before config check": ["--config", "a.yaml", "--config", "b.yaml", "config", "check"],
    "after config": ["config", "--config", "a.yaml", "--config", "b.yaml", "check"],
    "after config check": ["config", "check", "--config", "a.yaml", "--config", "b.yaml"],
    "after inbox dead": ["inbox", "dead", "--config", "a.yaml", "--config", "b.yaml"],
    "the same file first and again": ["--config", "a.yaml", "--config", "./a.yaml", "--config", "b.yaml", "worker"],
}


@pytest.mark.parametrize("argv", ARGVS.values(), ids=ARGVS.keys())
def test_config_twice_at_one_level_naming_different_files_is_a_usage_error_naming_both(argv, capsys):
    refused_naming_both(argv, capsys)


@pytest.mark.parametrize("argv, status", [
    (["--config", "b.yaml", "--config", "./b.yaml", "run"], EXIT_CONFIG),
    (["config", "check", "--config", "b.yaml", "--config", "b.yaml"], 1),
], ids=["run", "check"])
def test_the_same_file_twice_at_one_level_is_read(argv, status, capsys):
    assert main(argv) == status
    assert "server.port: expected an integer" in capsys.readouterr().err


def test_config_twice_and_a_path_for_check_still_compare_with_the_path(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["config", "check", "b.yaml", "--config", "a.yaml", "--config", "./a.yaml"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == ("switchboard: error: config check: --config ./a.yaml and PATH"
                                                        " b.yaml name different files; give one of them")
