"""A state directory (or workspace) whose name the locale's file name encoding cannot write: a config file read
as UTF-8 names it with ``✓``, the gateway runs with an ASCII locale. Its first look at the path raised
UnicodeEncodeError, a traceback naming neither the setting nor a cure."""

from __future__ import annotations

import subprocess

import pytest

from tests.gateway.cli_process import TIMEOUT, command, environment, write_config

ASCII_LOCALE = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}


@pytest.mark.parametrize("setting, named", [
    ({"state_dir": "{tmp}/state-\u2713"}, "state_dir (or $SWITCHBOARD_STATE_DIR)"),
    ({"state_dir": "{tmp}/state", "agent": {"workspace": "{tmp}/work-\u2713"}}, "agent.workspace"),
])
def test_a_name_the_locale_cannot_write_is_one_line_naming_the_setting(tmp_path, setting, named):
    data = {k: v.format(tmp=tmp_path) if isinstance(v, str) else {"workspace": v["workspace"].format(tmp=tmp_path)}
            for k, v in setting.items()}
    config = write_config(tmp_path / "c.yaml", data)
    done = subprocess.run(command("--config", str(config), "ask", "hello"), capture_output=True,
                          stdin=subprocess.DEVNULL, cwd=tmp_path, env=environment(tmp_path, **ASCII_LOCALE),
                          timeout=TIMEOUT)
    err = done.stderr.decode("ascii", "replace")
    assert done.returncode == 1, err
    assert "Traceback" not in err and "UnicodeEncodeError" not in err
    assert "'\\u2713', which file names here cannot (ascii, from the locale)" in err and named in err
