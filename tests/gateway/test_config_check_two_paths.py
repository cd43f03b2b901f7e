"""`switchboard --config A config check B`: two files named for one check. It checked B alone, and the
operator, who had named A, took B's verdict for A's."""

import pytest

from gateway.cli import main

pytestmark = pytest.mark.usefixtures("cli_isolated")


@pytest.fixture
def files(tmp_path):
    (tmp_path / "broken.yaml").write_text("server:\n  port: eighty\n")
    (tmp_path / "good.yaml").write_text("server:\n  port: 9001\n")
    return "broken.yaml", "good.yaml"


@pytest.mark.parametrize("where", [
    lambda given, path: ["--config", given, "config", "check", path],
    lambda given, path: ["config", "--config", given, "check", path],
    lambda given, path: ["config", "check", path, "--config", given],
], ids=["before the command", "after config", "after check"])
def test_config_and_a_different_path_are_a_usage_error_naming_both(files, where, capsys):
    broken, good = files
    with pytest.raises(SystemExit) as stopped:
        main(where(broken, good))
    assert stopped.value.code == 2
    err = capsys.readouterr()
    assert err.out == ""
    assert err.err.startswith("usage: switchboard")
    assert err.err.splitlines()[-1] == (f"switchboard: error: config check: --config {broken} and PATH {good}"
                                        " name different files; give one of them")


def test_config_and_a_path_to_the_same_file_check_it(files, tmp_path, capsys):
    broken, _ = files
    assert main(["--config", broken, "config", "check", str(tmp_path / broken)]) == 1
    assert "error: server.port: expected an integer" in capsys.readouterr().err
    # A file that is not there, named twice alike, is named as missing: no usage error for it.
    assert main(["--config", "missing.yaml", "config", "check", "./missing.yaml"]) == 1
    assert f"config file {tmp_path / 'missing.yaml'} does not exist" in capsys.readouterr().err


def test_the_environments_file_still_gives_way_to_the_path(files, monkeypatch, capsys):
    # $SWITCHBOARD_CONFIG is the lookup's default, as for every command: a path given overrides it.
    broken, good = files
    monkeypatch.setenv("SWITCHBOARD_CONFIG", broken)
    assert main(["config", "check", good]) == 0
    assert "port: 9001" in capsys.readouterr().out
