"""A second Ctrl-C while the stop of `switchboard run` is held by code that blocks the loop (a plugin's or an
adapter's synchronous call) ends the process at once, status 130 and no traceback, as the docs say
(docs/gateway.md): not once the blocking call returns."""

from __future__ import annotations

import signal
import sys
import textwrap
import time

from tests.gateway import cli_process
from tests.gateway.cli_process import TIMEOUT, Running, write_config

BLOCK = 30.0
"""Seconds the platform's close blocks the loop."""
AT_ONCE = 5.0
"""Seconds from the second SIGINT to the end of the process, with slack for a loaded machine."""
DRIVER = f"""
    import logging
    import sys
    import time

    import gateway.serve
    from gateway.testing import RecordingAdapter

    class BlocksItsClose(RecordingAdapter):
        async def stop(self):
            logging.getLogger("slow").warning("the platform's close blocks")
            time.sleep({BLOCK})  # a synchronous call on the loop
            await super().stop()

    gateway.serve.build_adapters = lambda config, **options: [BlocksItsClose("slow")]
    sys.argv = ["switchboard", *sys.argv[1:]]
    from gateway.entry import main
    main()
"""


def test_a_second_sigint_while_the_stop_blocks_the_loop_ends_the_process_at_once(tmp_path, monkeypatch):
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(DRIVER))
    # `switchboard run` itself, its platform replaced by one whose close blocks the loop.
    monkeypatch.setattr(cli_process, "command", lambda *args: [sys.executable, str(driver), *args])
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(tmp_path / "state"), "server": {"port": 0}})
    with Running(tmp_path, "--config", str(config)) as gateway:
        gateway.wait_for("gateway running")
        gateway.proc.send_signal(signal.SIGINT)
        gateway.wait_for("the platform's close blocks")
        began = time.monotonic()
        gateway.proc.send_signal(signal.SIGINT)
        status = gateway.proc.wait(BLOCK + TIMEOUT)
        took = time.monotonic() - began
    # Before: the loop's handler waited for the blocking call to return, 30 s.
    assert took < AT_ONCE, gateway.lines[-5:]
    assert status == 130, gateway.lines[-5:]
    assert not any("Traceback" in line or "KeyboardInterrupt" in line for line in gateway.lines), gateway.lines
