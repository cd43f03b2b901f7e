"""`sessions.retention_days`: off unless set, checked by `switchboard config check` like every number."""

from __future__ import annotations

import io

import pytest

from gateway.config import Config, config_check


def run_check(path, overrides=()) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = config_check(None if path is None else str(path), out, err, env={}, overrides=overrides)
    return status, out.getvalue(), err.getvalue()


def test_sessions_are_kept_until_new_unless_the_setting_says_otherwise(load):
    assert Config().sessions.retention_days == 0
    config, warnings = load("sessions:\n  retention_days: 90\n")
    assert config.sessions.retention_days == 90.0 and warnings == []


@pytest.mark.parametrize(("written", "shown"), [("-1", "-1"), ("ninety", '"ninety"'), ("", "null"),
                                                (".nan", "nan"), ("[30]", "a list")])
def test_a_bad_retention_is_an_error_naming_the_key(write, written, shown):
    status, out, err = run_check(write(f"sessions:\n  retention_days: {written}\n"))
    assert status == 1 and out == ""
    assert err.splitlines()[0] == f"error: sessions.retention_days: expected a number ≥ 0, got {shown}"


def test_the_retention_set_on_the_command_line_is_checked_and_shown(write):
    status, _, err = run_check(None, overrides=["sessions.retention_days=-5"])
    assert status == 1 and err.startswith("error: sessions.retention_days: expected a number ≥ 0, got -5")
    status, out, err = run_check(None, overrides=["sessions.retention_days=30"])
    assert status == 0 and err == "" and "sessions:\n  retention_days: 30.0\n" in out
