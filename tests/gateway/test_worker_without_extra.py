"""`switchboard worker` on a machine without the temporal extra: one line saying how to install it, and a
status the systemd unit does not start again (docs/configuration.md#exit-status), as only the operator mends it.
Raised bare, the ImportError would exit 1, and the unit start it again every 5 s, failing alike."""

from __future__ import annotations

import sys

import pytest

from gateway.errors import StartupError
from gateway.startup_errors import lasting
from gateway.testing import make_config
from gateway.worker import run_worker


async def test_a_worker_without_the_temporal_extra_says_how_to_install_it_and_is_not_started_again(
        tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "lifecycle.temporal", None)  # its import fails, as without the Temporal SDK
    with pytest.raises(StartupError) as caught:
        await run_worker(make_config(tmp_path, lifecycle={"engine": "temporal"}))
    assert str(caught.value) == ("switchboard worker needs the temporal extra: pip install '.[temporal]'"
                                 " in the checkout")
    assert lasting(caught.value)
