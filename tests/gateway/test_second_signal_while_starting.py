"""A second SIGTERM while a start cancelled by the first still unwinds ends the process at once
(`gateway.stop_signals`): the first signal's handler goes with the first signal, not once the
start has finished unwinding, which an adapter closing its connection to a platform that does
not answer (Discord's stop hands over and closes within its 5 s drain) holds for seconds."""

from __future__ import annotations

import signal
import sys
import textwrap
import time

from tests.gateway import cli_process
from tests.gateway.cli_process import TIMEOUT, Running, write_config

UNWIND = 20.0
"""Seconds the platform's adapter takes to unwind its cancelled start."""
AT_ONCE = 5.0
"""Seconds from the second SIGTERM to the end of the process, with slack for a loaded machine."""
DRIVER = f"""
    import asyncio
    import logging
    import sys

    import gateway.serve
    from gateway.testing import RecordingAdapter

    class SlowToUnwind(RecordingAdapter):
        async def start(self, sink, commands=()):
            try:
                logging.getLogger("slow").warning("the platform is connecting")
                await asyncio.Event().wait()  # a platform that takes its time to answer at start
            except asyncio.CancelledError:
                logging.getLogger("slow").warning("the platform's connection closes")
                await asyncio.sleep({UNWIND})  # its close is never answered
                raise

    gateway.serve.build_adapters = lambda config, **options: [SlowToUnwind("slow")]
    sys.argv = ["switchboard", *sys.argv[1:]]
    from gateway.entry import main
    main()
"""


def test_a_second_sigterm_while_a_cancelled_start_unwinds_ends_the_process_at_once(tmp_path, monkeypatch):
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(DRIVER))
    # `switchboard run` itself, its platform replaced by one that unwinds slowly.
    monkeypatch.setattr(cli_process, "command", lambda *args: [sys.executable, str(driver), *args])
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(tmp_path / "state"), "server": {"port": 0}})
    with Running(tmp_path, "--config", str(config)) as gateway:
        gateway.wait_for("the platform is connecting")
        gateway.proc.send_signal(signal.SIGTERM)
        gateway.wait_for("the platform's connection closes")
        began = time.monotonic()
        gateway.proc.send_signal(signal.SIGTERM)
        status = gateway.proc.wait(TIMEOUT)
        took = time.monotonic() - began
        # Before: the second signal was swallowed, and the process ended 0 once the start had unwound.
        assert status == -signal.SIGTERM, gateway.lines[-5:]
        assert took < AT_ONCE
