"""A stop signal before the gateway sets its own handlers (while it loads, or checks the model server) ends the
process by raising in whatever runs: an object it cuts short mid-construction (a transport of the model check's
connection) then fails in its finalizer at exit, and Python printed "Exception ignored in …" with a traceback
under a clean stop (`gateway.early_signals`)."""

from __future__ import annotations

import signal
import sys

import pytest

from gateway import early_signals


class Torn:
    """An object a signal cut short: its finalizer reads an attribute its constructor never set."""

    def __del__(self) -> None:
        raise AttributeError("'Torn' object has no attribute '_closing'")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_after_a_stop_signal_a_finalizer_it_cut_short_prints_nothing(capsys, monkeypatch, signum):
    monkeypatch.setattr(early_signals, "_caught", None)
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)  # as after the program loaded
    with pytest.raises(SystemExit) as stop:
        early_signals.terminate(signum, None)
    assert stop.value.code == 128 + signum
    Torn()  # collected at once: its finalizer fails
    assert capsys.readouterr().err == ""


def test_before_any_signal_a_failing_finalizer_is_still_reported(capsys, monkeypatch):
    monkeypatch.setattr(early_signals, "_caught", None)
    monkeypatch.setattr(sys, "unraisablehook", early_signals.unraisable)  # as while the program loads
    Torn()
    assert "AttributeError" in capsys.readouterr().err
