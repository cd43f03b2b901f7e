"""How the ``switchboard`` process ends once its command has returned (`gateway.process_exit`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import atexit, logging, sys
    {load}
    from gateway.process_exit import exit_process
    logging.basicConfig(stream=sys.stderr, format="%(message)s")
    atexit.register(lambda: print("finalized", file=sys.stderr, flush=True))
    logging.getLogger("x").warning("the reason, logged")
    print("the answer, buffered")  # stdout is a pipe here: block-buffered until flushed
    exit_process(3)
""")


@pytest.mark.parametrize("temporal", [True, False])
def test_the_status_logs_and_output_survive_and_finalization_is_skipped_only_with_temporal_loaded(temporal):
    # With Temporal's runtime loaded, finalizing the interpreter can abort the process
    # (temporalio/sdk-python#300): it is skipped, and what finalization would have flushed is flushed first.
    load = "import temporalio.bridge.temporal_sdk_bridge" if temporal else ""
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(load=load)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "the answer, buffered\n"
    assert "the reason, logged" in done.stderr
    assert ("finalized" in done.stderr) is not temporal
