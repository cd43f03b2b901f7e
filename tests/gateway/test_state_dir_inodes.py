"""A state directory whose disk has bytes to spare but no inodes left: the start names that, exit status 1,
as for a full disk, where it said only "unable to open database file; check the file and its directory"."""

from __future__ import annotations

import pytest

from gateway.host import STATE_DB
from gateway.store import GatewayStore
from tests.gateway.cli_process import on_private_tmpfs, problem_lines, run, write_config

WEBHOOK = {"server": {"port": 0},
           "platforms": {"webhook": {"enabled": True, "routes": {"hook": {"secret": "s3cret-0"}}}}}
USE_UP_THE_INODES = 'i=0; while touch "$0/f$i" 2>/dev/null; do i=$((i+1)); done'


def without_inodes(tmp_path, *args: str) -> str:
    """The one line ``switchboard args…`` ends with, exit status 1, on a state directory a gateway ran in
    before (its database and lock file are there) whose disk has no inodes left."""
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    GatewayStore(earlier / STATE_DB).close()
    state = tmp_path / "state"
    config = write_config(tmp_path / "c.yaml", {**WEBHOOK, "state_dir": str(state)})
    then = f'{{ cp "{earlier / STATE_DB}" "$0/" && touch "$0/switchboard.lock" && {USE_UP_THE_INODES}; }}'
    prefix = on_private_tmpfs(state, "size=4m,nr_inodes=64,mode=0700", then=then)
    if prefix is None:
        pytest.skip("needs user and mount namespaces")
    result = run(tmp_path, *args, "--config", str(config), prefix=prefix)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    (line,) = problem_lines(result.stderr)
    return line


def test_a_disk_with_no_inodes_left_stops_the_start_naming_them(tmp_path):
    line = without_inodes(tmp_path, "run")
    assert line.startswith(f"switchboard: state directory {tmp_path / 'state'}: no free inodes left on its disk (0"
                           " free): no file can be created there; delete some files (`df -i` counts them), or point"
                           " state_dir"), line


def test_sqlite_unable_to_open_the_database_there_is_told_as_no_inodes(tmp_path):
    """SQLite says only "unable to open database file" (it cannot create the -shm): the command that
    met it, here a retry, which runs no start's checks, names the inodes too."""
    line = without_inodes(tmp_path, "inbox", "retry", "1")
    assert line.startswith(f"switchboard: state database {tmp_path / 'state' / STATE_DB}: no free inodes left on its"
                           " disk (0 free; unable to open database file): no file can be created there"), line
