"""`switchboard inbox dead` on a database no gateway runs on leaves its directory as it found it."""

from __future__ import annotations

import contextlib
import io

from gateway.cli import main
from gateway.host import STATE_DB
from gateway.store import GatewayStore


def test_listing_dead_letters_of_a_stopped_gateway_leaves_no_wal_or_shm_behind(tmp_path):
    # A -wal and -shm made by the operator's listing (as root, say) were files a gateway running as its own
    # user could not open at its next start.
    state = tmp_path / "state"
    state.mkdir()
    GatewayStore(state / STATE_DB).close()
    before = sorted(p.name for p in state.iterdir())
    assert before == [STATE_DB]
    config_file = tmp_path / "switchboard.yaml"
    config_file.write_text(f"state_dir: {state}\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--config", str(config_file), "inbox", "dead"]) == 0
    assert out.getvalue().strip() == "no dead letters"
    assert sorted(p.name for p in state.iterdir()) == before
