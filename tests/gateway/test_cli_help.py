"""Each command's own ``--help``, as a newcomer reads it before trying the command."""

import pytest

from gateway.cli import main

pytestmark = pytest.mark.usefixtures("cli_isolated")

SAYS = {
    ("ask",): "Run one agent turn and print the reply.",
    ("chat",): "Talk to the agent in this terminal",
    ("run",): "Run the gateway: HTTP server and every enabled platform.",
    ("worker",): "Run children for a gateway with lifecycle.engine: temporal",
    ("config",): "Configuration tools.",
    ("config", "check"): "Validate a config file and print the effective configuration.",
    ("inbox",): "Events the gateway could not handle.",
    ("inbox", "dead"): "List the dead letters.",
    ("inbox", "retry"): "Hand a dead letter back to the gateway.",
    ("inbox", "dismiss"): "Forget a dead letter: its event will not be handled.",
}


def _help(capsys, words):
    with pytest.raises(SystemExit) as exit_:
        main([*words, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("words", SAYS, ids=" ".join)
def test_a_commands_help_says_what_it_does(capsys, words):
    # Its options alone told nothing of what `switchboard run` runs.
    assert SAYS[words] in " ".join(_help(capsys, words).split())


def test_config_checks_help_names_its_file_path_as_the_readme_does(capsys):
    out = _help(capsys, ("config", "check"))
    assert out.startswith("usage: switchboard config check [-h] [--config PATH] [--set KEY=VALUE] [PATH]\n")
    assert "\n  PATH " in out
