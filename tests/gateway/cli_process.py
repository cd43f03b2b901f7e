"""The real ``switchboard`` CLI as a subprocess on a temporary state directory, for start-up tests."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 45.0
"""Seconds any one command may take before the test fails (a hang is a defect too). Under the
suite's 60 s per test; above the 30 s that `switchboard run` with Telegram (aiogram loads for
seconds of CPU) went past, starting and failing, on a loaded 2-core machine."""
EXIT_WITHIN = 10.0
"""Seconds from a stop signal to the end of a process still starting: a hung platform or plugin
alone would hold it for a minute."""


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWITCHBOARD_", "XDG_"))}
    env.update(HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT), **extra)
    return env


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "gateway.cli", *args]


def write_config(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def run(tmp_path: Path, *args: str, env: dict[str, str] | None = None, prefix: Sequence[str] = (),
        timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    """Run one command to its end; stdin is closed."""
    return subprocess.run([*prefix, *command(*args)], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, cwd=tmp_path, env=env or environment(tmp_path))


def together(*commands: Callable[[], subprocess.CompletedProcess[str]]) -> list[subprocess.CompletedProcess[str]]:
    """The results of ``commands`` (each a `run`), run at the same time: for commands that do not depend
    on each other, whose loading (seconds of CPU each) then shares the machine's cores."""
    with ThreadPoolExecutor(len(commands)) as pool:
        return [future.result() for future in [pool.submit(call) for call in commands]]


def problem_lines(stderr: str) -> list[str]:
    """The lines a failed command printed for the operator (log lines excluded)."""
    return [line for line in stderr.splitlines() if line.startswith(("switchboard:", "error:"))]


def on_private_tmpfs(mount_point: Path, options: str, then: str = "") -> list[str] | None:
    """A command prefix that runs what follows with a fresh tmpfs (``mount -o options``) on
    ``mount_point``, in private user and mount namespaces, after the shell command ``then``;
    None where this machine does not allow that (no ``unshare``, namespaces disabled)."""
    if shutil.which("unshare") is None:
        return None
    mount_point.mkdir(parents=True, exist_ok=True)
    script = f'mount -t tmpfs -o {options} tmpfs "$0" && {then or "true"} && exec "$@"'
    prefix = ["unshare", "-rm", "sh", "-c", script, str(mount_point)]
    probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10)
    return prefix if probe.returncode == 0 else None


class Running:
    """``switchboard run`` in the background; `url` once it listens, `stop` for a graceful end."""

    def __init__(self, tmp_path: Path, *args: str, env: dict[str, str] | None = None,
                 prefix: Sequence[str] = ()) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self.proc = subprocess.Popen([*prefix, *command(*args, "run")], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                                     env=env or environment(tmp_path))
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()
        self.url = ""

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self.lines.append("")  # EOF marker
            self._changed.notify_all()

    def wait_for(self, pattern: str, timeout: float = TIMEOUT) -> re.Match[str]:
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines:
                    if match := regex.search(line):
                        return match
                if self.lines and self.lines[-1] == "":
                    raise AssertionError(f"stderr ended before {pattern!r}: {self.lines}")
                left = deadline - time.monotonic()
                if left <= 0 or not self._changed.wait(left):
                    raise AssertionError(f"no {pattern!r} within {timeout}s: {self.lines}")

    def started(self) -> Running:
        self.url = self.wait_for(r"listening on (http://\S+)").group(1)
        self.wait_for("gateway running")
        return self

    def ends_on_sigterm(self, within: float) -> None:
        """SIGTERM ends the process with status 0 within ``within`` seconds (else it is killed, and the test fails)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(within)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"still running {within}s after SIGTERM: {self.lines[-5:]}") from None
        assert code == 0

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._drainer.join(TIMEOUT)
            assert self.proc.stderr is not None
            self.proc.stderr.close()

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
