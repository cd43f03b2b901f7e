"""`switchboard ask` and `switchboard inbox` given a `--set` of a known key they do not read: `inbox dead --set
server.port=9000` or `ask --set display.busy_input_mode=queue` changed nothing without a word, while its operator took
it for done. Each is now a warning naming the key, as `switchboard worker` warns (test_worker_set_unread.py); a key
nobody knows stays the error it was, status 78; a value, a secret maybe, is never shown."""

from __future__ import annotations

import pytest

from gateway.cli import EXIT_CONFIG, main
from gateway.host import STATE_DB
from gateway.store import GatewayStore

pytestmark = pytest.mark.usefixtures("cli_isolated")

TOKEN = "123456789:AAH-ask-set-token-not-to-be-shown"
ASK = ("switchboard ask does not read this setting, so it changes nothing here; it is the gateway's: give it to"
       " `switchboard run` or `switchboard chat`")


def inbox(command: str) -> str:
    reads = "state_dir and platforms.<name>.enabled" if command == "retry" else "state_dir"
    return f"switchboard inbox {command} does not read this setting, so it changes nothing here; it reads {reads} alone"


def told(err: str) -> list[str]:
    return [line for line in err.splitlines() if "does not read this setting" in line]


def test_ask_warns_of_each_gateway_setting_it_was_given_by_key_and_answers_all_the_same(capsys):
    assert main(["--set", "server.port=9000", "ask", "--set", "display.busy_input_mode=queue",
                 "--set", f"platforms.telegram.token={TOKEN}", "--set", "agent.max_iterations=7",
                 "--set", "server.port=9001", "--set", "server.shutdown_grace_seconds=3", "hello"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("[demo]")
    assert TOKEN not in out + err
    # Each key once, in the order first written; what ask reads (agent, the stop's grace) is not warned of.
    assert told(err) == [f"warning: --set {key}: {ASK}"
                         for key in ("server.port", "display.busy_input_mode", "platforms.telegram.token")]
    assert any(line.startswith("warning: --set platforms.telegram.token: a secret on the command line")
               for line in err.splitlines()), err


def test_a_key_nobody_knows_is_still_the_error_and_status_78_and_a_known_one_beside_it_a_warning(capsys, tmp_path):
    (tmp_path / "state").mkdir()
    GatewayStore(tmp_path / "state" / STATE_DB).close()
    for command in (["ask", "hello"], ["inbox", "dead"], ["inbox", "retry", "1"]):
        assert main([*command, "--set", "server.prot=3", "--set", "display.progres=card",
                     "--set", "server.port=9000"]) == EXIT_CONFIG
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert sorted(errors) == ['error: --set display.progres: unknown key (did you mean "progress"?)',
                                  'error: --set server.prot: unknown key (did you mean "port"?)'], (command, err)
        # The known key among them is told too, after the errors, as the worker tells it; the misspelt ones are not.
        what = ASK if command[0] == "ask" else inbox(command[1])
        assert told(err) == [f"warning: --set server.port: {what}"], (command, err)


def test_each_inbox_command_warns_of_what_it_does_not_read_and_not_of_what_it_does(capsys, tmp_path):
    state = tmp_path / "elsewhere"
    state.mkdir()
    GatewayStore(state / STATE_DB).close()
    pairs = ["--set", f"state_dir={state}", "--set", "server.port=9000", "--set", "agent.max_iterations=3",
             "--set", "logging.level=debug", "--set", "platforms.telegram.enabled=false",
             "--set", f"platforms.telegram.token={TOKEN}"]
    for command, status in ((["dead"], 0), (["retry", "1"], 1), (["dismiss", "1"], 1)):
        assert main(["inbox", *command, *pairs]) == status
        out, err = capsys.readouterr()
        assert TOKEN not in out + err
        unread = ["server.port", "agent.max_iterations", "logging.level", "platforms.telegram.enabled",
                  "platforms.telegram.token"]
        if command[0] == "retry":  # it says whether the letter's platform is enabled: that it reads
            unread.remove("platforms.telegram.enabled")
        assert told(err) == [f"warning: --set {key}: {inbox(command[0])}" for key in unread], (command, err)
        if command[0] != "dead":
            assert "no dead letter 1" in err  # the state_dir set was read: its database, not a missing one
        else:
            assert "no state database" not in err


def test_a_pair_that_is_no_key_value_is_its_error_alone(capsys):
    assert main(["inbox", "dead", "--set", "server.port", "--set", "server.host=0.0.0.0"]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith(("error:", "warning:"))] == [
        "error: --set server.port: expected KEY=VALUE with a dotted key, e.g. server.port=9000"]


def test_a_value_refused_is_its_error_alone_not_also_said_to_change_nothing(capsys, tmp_path, monkeypatch):
    # `inbox dead --set server.port=abc` ends with status 78 for that value, `ask --set server.host=0.0.0.0` for the
    # console's token it then needs: told beside it that the setting "changes nothing here", its operator could not
    # tell whether to mend it or drop it. A key beside them that is fine is told.
    monkeypatch.delenv("SB_TEST_UNSET", raising=False)
    (tmp_path / "state").mkdir()
    GatewayStore(tmp_path / "state" / STATE_DB).close()
    for command in (["ask", "hello"], ["inbox", "dead"], ["inbox", "retry", "1"]):
        assert main([*command, "--set", "server.port=abc", "--set", "display.progress=${SB_TEST_UNSET}",
                     "--set", "server.host=0.0.0.0", "--set", "display.busy_input_mode=queue"]) == EXIT_CONFIG
        err = capsys.readouterr().err
        errors = [line.partition(": ")[2].partition(":")[0] for line in err.splitlines() if line.startswith("error:")]
        assert sorted(errors) == ["display.progress", "server.console_token", "server.port"], (command, err)
        assert "(only with --set server.host)" in err
        what = ASK if command[0] == "ask" else inbox(command[1])
        assert told(err) == [f"warning: --set display.busy_input_mode: {what}"], (command, err)


def test_the_wait_for_a_model_server_down_is_warned_of_as_unread_by_ask(capsys):
    # Only a chat message's turn waits for a model server down; ask held the setting and never acted on it.
    assert main(["ask", "--set", "model.wait_when_down_seconds=30", "--set", "model.timeout_seconds=30", "hello"]) == 0
    assert told(capsys.readouterr().err) == [f"warning: --set model.wait_when_down_seconds: {ASK}"]
