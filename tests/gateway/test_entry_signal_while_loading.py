"""A stop signal at any moment of `gateway.entry.main`'s loading ends it with its status and no traceback:
here the signal lands while it imports `gateway.process_exit`, the first thing it loads once its handlers are
set (a Ctrl-C in the first tenth of a second of `make run` printed a KeyboardInterrupt traceback)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.gateway.cli_process import ROOT, TIMEOUT, environment

# The signal is sent from an audit hook as the import begins: its handler runs inside that import.
SCRIPT = """\
import os, signal, sys
sent = []
def hook(event, args):
    if event == "import" and args[0] == "gateway.process_exit" and not sent:
        sent.append(True)
        os.kill(os.getpid(), signal.SIG{name})
sys.addaudithook(hook)
from gateway.entry import main
sys.exit(main())
"""


@pytest.mark.parametrize(("name", "status"), [("INT", 130), ("TERM", 143)])
def test_a_signal_while_the_first_module_loads_ends_it_without_a_traceback(tmp_path, name, status):
    result = subprocess.run([sys.executable, "-c", SCRIPT.format(name=name), "chat"], capture_output=True,
                            text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL, cwd=ROOT,
                            env=environment(tmp_path, SWITCHBOARD_STATE_DIR=str(tmp_path / "state")))
    assert (result.returncode, result.stderr) == (status, "")
    assert not (tmp_path / "state").exists()  # it ended there, before the command ran
