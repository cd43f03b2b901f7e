"""`switchboard chat` under ``LC_ALL=C`` (a script's or a CI job's setting, which Python's UTF-8 mode reads and
writes UTF-8 under all the same): readline shows a typed ``é`` as the bytes it cannot decode, ``\\303\\251``,
and a reply printed while a line is typed must draw that line again as readline drew it."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import subprocess
import sys
import time

import pytest
import yaml

from tests.scenarios.test_terminal_chat import CONTROLLING, ROOT


def _read_until(controller: int, seen: bytearray, needle: bytes, *, after: int = 0, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while needle not in seen[after:]:
        ready, _, _ = select.select([controller], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no {needle!r} on the terminal; saw {bytes(seen)!r}"
        chunk = b""
        with contextlib.suppress(OSError):  # EIO: the chat has ended
            chunk = os.read(controller, 4096)
        assert chunk, f"the chat ended before {needle!r}; saw {bytes(seen)!r}"
        seen += chunk


@pytest.mark.parametrize("locale, typed_as", [("C", b"h\\303\\251llo"), ("C.UTF-8", "h\u00e9llo".encode())])
def test_a_line_typed_under_the_c_locale_is_drawn_again_as_readline_drew_it(tmp_path, locale, typed_as):
    config = tmp_path / "switchboard.yaml"
    config.write_text(yaml.safe_dump({
        "state_dir": str(tmp_path / "state"), "model": {"demo": {"child_steps": 2, "step_seconds": 0.3}},
        "delegation": {"gateway_mode": "inline"}, "agent": {"gateway_notify_interval": 0.2}}))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("LC_") and k != "LANG"}, "LC_ALL": locale,
           "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "TERM": "xterm", "INPUTRC": "/dev/null"}
    controller, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", CONTROLLING, "--config", str(config), "chat"], stdin=terminal,
                            stdout=terminal, stderr=terminal, cwd=tmp_path, env=env, start_new_session=True)
    os.close(terminal)
    seen = bytearray()
    try:
        _read_until(controller, seen, b"you> ")
        os.write(controller, b"Compare these:\r- apples\r- pears\r")
        _read_until(controller, seen, b"Working")
        typed_at = len(seen)
        os.write(controller, "h\u00e9llo".encode())  # not entered: the turn's notices and answer come above it
        _read_until(controller, seen, b"Done in", after=typed_at)
        _read_until(controller, seen, b"you> " + typed_as, after=seen.index(b"Done in", typed_at))
        assert "\ufffd".encode() not in seen[typed_at:]
        os.write(controller, b"\x15\x04")  # Ctrl-U drops the line, Ctrl-D at the empty prompt leaves
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(controller)
