"""A port the gateway's user may not listen on (below 1024, without CAP_NET_BIND_SERVICE) is refused at every
start alike: status 78, which deploy/switchboard.service does not restart (docs/configuration.md#exit-status)."""

from __future__ import annotations

import errno
import shutil
import subprocess
import sys

import pytest

from gateway.cli import EXIT_CONFIG
from gateway.errors import StartupError
from gateway.server import _bind_problem, bind_failed
from gateway.startup_errors import lasting
from tests.gateway.cli_process import problem_lines, run, write_config
from tests.test_deploy import unit_setting

PRIVILEGED_PORT = 81
# A user namespace's root holds no CAP_NET_BIND_SERVICE over the machine's network: as the unit's User= does not.
UNPRIVILEGED = ["unshare", "-r"]


def _privileged_ports_refused() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = f"import socket; socket.socket().bind(('127.0.0.1', {PRIVILEGED_PORT}))"
    result = subprocess.run([*UNPRIVILEGED, sys.executable, "-c", probe], capture_output=True, text=True, timeout=10)
    return "Permission denied" in result.stderr


@pytest.mark.skipif(not _privileged_ports_refused(), reason="no user namespaces, or every port is open to all")
def test_a_port_the_user_may_not_listen_on_is_not_started_again(tmp_path):
    # server.port: 443, for Telegram's webhook, under the unit's User=switchboard: restarted, the gateway logged
    # the same refusal every 5 s for ever, where nothing but the operator's change could mend it.
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(tmp_path / "state"),
                                                "server": {"port": PRIVILEGED_PORT}})
    result = run(tmp_path, "run", "--config", str(config), prefix=UNPRIVILEGED)
    [line] = problem_lines(result.stderr)
    assert "is not permitted" in line, result.stderr
    assert result.returncode == EXIT_CONFIG, result.stderr
    assert str(result.returncode) in unit_setting("RestartPreventExitStatus")


def _bind_failed(code: int, reason: str) -> StartupError:
    cause = OSError(code, f"error while attempting to bind on address ('127.0.0.1', 80): {reason}")
    try:
        raise bind_failed("127.0.0.1", 80, cause) from cause
    except StartupError as exc:
        return exc


def test_only_a_bind_the_user_may_not_make_lasts():
    assert lasting(_bind_failed(errno.EACCES, "permission denied"))
    assert not lasting(_bind_failed(errno.EADDRINUSE, "address already in use"))  # its holder may be on its way out
    assert not lasting(_bind_failed(errno.EADDRNOTAVAIL, "cannot assign requested address"))  # an address to come
    # Permission denied elsewhere (a state directory not given to the gateway's user yet) may mend: issue 14.
    try:
        raise StartupError("state directory …") from PermissionError(errno.EACCES, "Permission denied", "/srv/x")
    except StartupError as exc:
        assert not lasting(exc)


def test_the_fix_named_fits_the_port_refused():
    refused = OSError(errno.EACCES, "Permission denied")
    assert _bind_problem("0.0.0.0", 443, refused).endswith("use a port above 1023, or put a proxy in front")
    above = _bind_problem("0.0.0.0", 8443, refused)  # no privileged port: a policy refuses it
    assert "above 1023" not in above and "security policy" in above
