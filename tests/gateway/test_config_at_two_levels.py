"""`switchboard --config A run --config B`: two files named for one command, before it and after it. The
innermost was read without a word (argparse keeps the last value), and the outcome taken for A's."""

import pytest

from gateway.cli import EXIT_CONFIG, main


@pytest.fixture(autouse=True)
def isolated(cli_isolated, tmp_path):
    (tmp_path / "a.yaml").write_text("server:\n  port: 9001\n")
    (tmp_path / "b.yaml").write_text("server:\n  port: eighty\n")  # what was read, before: fails fast


COMMANDS = [["ask", "hi"], ["chat"], ["run"], ["worker"], ["config", "check"], ["inbox", "dead"],
            ["inbox", "retry", "1"], ["inbox", "dismiss", "1"]]


def given_at(levels, command, paths):
    """``command`` with --config PATH at each of ``levels`` (0: before it, 1: after its first word, 2: after
    its subcommand), the paths in that order."""
    argv, paths = [], iter(paths)
    for level, word in enumerate(["", *command]):
        if word:
            argv.append(word)
        if level in levels:
            argv += ["--config", next(paths)]
    return argv


CASES = [pytest.param(given_at((0, 1), command, ("a.yaml", "b.yaml")), id=" ".join(command)) for command in COMMANDS]
CASES += [pytest.param(given_at(levels, command, ("a.yaml", "b.yaml")), id=f"{' '.join(command)} at {levels}")
          for command in (["config", "check"], ["inbox", "dead"], ["inbox", "retry", "1"])
          for levels in ((1, 2), (0, 2))]
CASES += [pytest.param(["--config", "a.yaml", "config", "--config", "./a.yaml", "check", "--config", "b.yaml"],
                       id="three levels, the last different")]


@pytest.mark.parametrize("argv", CASES)
def test_config_before_and_after_a_command_naming_different_files_is_a_usage_error_naming_both(argv, capsys):
    refused_naming_both(argv, capsys)


def refused_naming_both(argv, capsys) -> None:
    """``argv`` is refused as a usage mistake naming a.yaml and b.yaml, before anything is read."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr()
    assert err.out == ""
    assert err.err.startswith("usage: switchboard")
    assert err.err.splitlines()[-1] == ("switchboard: error: --config a.yaml and --config b.yaml name different files;"
                                        " give one of them")


@pytest.mark.parametrize("command, status", [(["run"], EXIT_CONFIG), (["config", "check"], 1)], ids=["run", "check"])
def test_the_same_file_before_and_after_a_command_is_read(command, status, tmp_path, capsys):
    assert main(given_at((0, 1), command, ("b.yaml", str(tmp_path / "b.yaml")))) == status
    assert "server.port: expected an integer" in capsys.readouterr().err
    # A file that is not there, named twice alike, is named as missing: no usage error for it.
    assert main(given_at((0, 1), command, ("missing.yaml", "./missing.yaml"))) == status
    assert f"config file {tmp_path / 'missing.yaml'} does not exist" in capsys.readouterr().err
