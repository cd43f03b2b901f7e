"""`switchboard inbox` on a state directory that is no directory says so, as a start says it: the path under it
read as missing, and the command said "no state database …: nothing has been received yet", sending the operator
to look for messages that never came instead of at the setting."""

from __future__ import annotations

import contextlib
import io

import pytest

from gateway.cli import main


@pytest.mark.parametrize("command", [["dead"], ["retry", "1"], ["dismiss", "1"]])
def test_an_inbox_command_on_a_state_dir_that_is_a_file_names_it(tmp_path, command):
    state = tmp_path / "state"
    state.write_text("not a directory\n")
    config_file = tmp_path / "switchboard.yaml"
    config_file.write_text(f"state_dir: {state}\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["--config", str(config_file), "inbox", *command]) == 1
    assert err.getvalue().splitlines() == [
        f"switchboard: state directory {state} is a file, not a directory; move the file away, or point state_dir"
        " (or $SWITCHBOARD_STATE_DIR) at a directory"], err.getvalue()
    assert state.read_text() == "not a directory\n"
